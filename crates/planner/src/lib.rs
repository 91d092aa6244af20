//! The query side of gpsense: parsing, query graphs and matching order (being written).
