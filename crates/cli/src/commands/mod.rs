pub mod info;
pub mod ingest;
