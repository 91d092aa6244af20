//! TruST kept with a graph: its name index, built by the first search, and the devices the
//! searches asked for, each opened by the first search that needs it (on the matcher's own
//! device state: [`Matcher::open_trust`]) and kept, a failed opening included. The facade's
//! [`crate::Graph`], the SPARQL endpoint and the Python package all search through one.

use std::sync::OnceLock;

use gpsense_runtime::device::DeviceError;
use gpsense_trust::{Opened, Params, Searched, Template, Trust, TrustEngine, TrustError};

use crate::Matcher;

/// TruST's name index and devices for one graph (see the module's documentation).
#[derive(Default)]
pub struct Trusts<'g> {
    index: OnceLock<Trust<'g>>,
    /// What `auto` and `gpu` opened: the GPU, or the CPU and why there is none.
    gpu: OnceLock<Result<Opened, String>>,
    emulated: OnceLock<Result<Opened, String>>,
}

impl<'g> Trusts<'g> {
    /// The name index of `m`'s graph (names and aliases), built on first use.
    pub fn name_index(&self, m: &Matcher<'g>) -> &Trust<'g> {
        self.index.get_or_init(|| Trust::new(m.graph()))
    }

    /// The `params.top` best matchings of `template` on `engine`: `auto` takes the GPU when one
    /// opens and passes its self-check, else the CPU, and answers on the CPU again when the GPU
    /// fails during the search ([`Searched::fell_back`] says why); `gpu` without one is
    /// [`TrustError::NoGpu`].
    pub fn search(
        &self,
        m: &Matcher<'g>,
        engine: TrustEngine,
        template: &Template,
        params: &Params,
    ) -> Result<Searched, TrustError> {
        let trust = self.name_index(m);
        let slot = match engine {
            TrustEngine::Cpu => {
                return Opened::Cpu { fallback: None }.search(trust, template, params, false);
            }
            TrustEngine::Emulated => &self.emulated,
            TrustEngine::Gpu | TrustEngine::Auto => &self.gpu,
        };
        let kind = match engine {
            TrustEngine::Gpu => TrustEngine::Auto,
            other => other,
        };
        let opened = slot.get_or_init(|| m.open_trust(kind).map_err(|e| e.to_string()));
        let opened = opened
            .as_ref()
            .map_err(|why| TrustError::Device(DeviceError::Fault(why.clone())))?;
        if let (
            TrustEngine::Gpu,
            Opened::Cpu {
                fallback: Some(why),
            },
        ) = (engine, opened)
        {
            return Err(TrustError::NoGpu(why.clone()));
        }
        opened.search(trust, template, params, engine == TrustEngine::Auto)
    }
}
