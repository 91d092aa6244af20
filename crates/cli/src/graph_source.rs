//! The graph a command works on (`--graph`, or the embedded default), loaded with a progress bar,
//! and the engine choice announced.

use std::path::Path;

use anyhow::Result;
pub use gpsense::Loaded;

use crate::progress::Bar;

/// Loads `path` (a snapshot, a compressed graph, or any file `gpsense ingest` reads), or the default
/// graph.
pub fn load(path: Option<&Path>) -> Result<Loaded> {
    let loaded = Loaded::open(path, &Bar::default())?;
    if let Some(p) = path.filter(|_| loaded.graph.edge_count() == 0) {
        if !crate::out::quiet() {
            eprintln!("note: {} holds no triples: the graph is empty", p.display());
        }
    }
    Ok(loaded)
}
/// Opens the GPU up front when the engine needs or prefers it: `gpu` without one is an error; with
/// `say` (`--explain`, `-v`), `auto` says why it runs on the CPU, or which GPU it uses.
pub fn announce_engine(
    engine: &gpsense_runtime::Engine,
    kind: gpsense_runtime::EngineKind,
    say: bool,
) -> Result<()> {
    use gpsense_runtime::EngineKind;
    let say = say && !crate::out::quiet();
    match (kind, engine.gpu()) {
        (EngineKind::Gpu, Err(e)) => anyhow::bail!("--engine gpu: {e}"),
        (EngineKind::Auto, Err(e)) if say => {
            eprintln!("note: {e}; running on the CPU (dfs engine)")
        }
        (EngineKind::Gpu | EngineKind::Auto, Ok(state)) if say => {
            eprintln!(
                "GPU: {} (graph placement: {:?})",
                state.describe(),
                state.placement()
            )
        }
        _ => {}
    }
    Ok(())
}
