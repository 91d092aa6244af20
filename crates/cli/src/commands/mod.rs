pub mod compress;
pub mod dump;
pub mod info;
pub mod ingest;
pub mod match_cmd;
pub mod partition;
pub mod query;
pub mod trust;
