//! The graph a command works on (`--graph`, or the embedded default), loaded with a progress bar,
//! and the engine choice announced.

use std::path::Path;

use anyhow::{Context, Result};
pub use gpsense::Loaded;

use crate::progress::Bar;

/// `auto`'s device constants from the file `GPSENSE_DEVICE_COSTS` names (written after a run on a
/// device), instead of the calibrated H100's.
fn device_costs(engine: &gpsense_runtime::Engine, say: bool) -> Result<()> {
    let Some(path) = std::env::var_os("GPSENSE_DEVICE_COSTS") else {
        return Ok(());
    };
    let costs =
        gpsense_runtime::DeviceCosts::load(Path::new(&path)).context("GPSENSE_DEVICE_COSTS")?;
    if say {
        eprintln!(
            "auto: device costs of {} (from {})",
            costs.device,
            Path::new(&path).display()
        );
    }
    engine.set_device_costs(costs);
    Ok(())
}

/// Loads `path` (a snapshot, a compressed graph, or any file `gpsense ingest` reads), or the default
/// graph.
pub fn load(path: Option<&Path>) -> Result<Loaded> {
    load_with_base(path, None)
}

/// [`load`], a text file's relative IRIs resolved against `base` (`query --base`).
pub fn load_with_base(path: Option<&Path>, base: Option<&str>) -> Result<Loaded> {
    let loaded = Loaded::open_with_base(path, base, &Bar::default())?;
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
    if kind == EngineKind::Auto {
        device_costs(engine, say)?;
    }
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
