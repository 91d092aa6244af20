//! `gpsense info [GRAPH]`: what a graph holds and what it costs.

use std::path::Path;

use crate::graph_source;
use anyhow::Result;
use gpsense::fmt::millis;

pub fn run(graph: Option<&Path>, top_relations: usize) -> Result<()> {
    let loaded = graph_source::load(graph)?;
    crate::out::print(gpsense::info::summary(
        &loaded.graph,
        &loaded.origin,
        top_relations,
    ))?;
    crate::out::print(format_args!("load time     {}\n", millis(loaded.load_time)))?;
    Ok(())
}
