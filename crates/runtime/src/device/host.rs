//! The host emulator: a [`Device`] whose memory is host memory and whose launches run every thread
//! of the grid on the CPU (in parallel with rayon), calling `gpsense_kernels::entry`, the functions
//! the PTX entry points call. It proves the GPU pipeline, the argument structs and the kernels'
//! index math on machines without a GPU.

use gpsense_kernels::entry;
use rayon::prelude::*;

use super::{Device, DeviceError, Launch};

/// Threads below which a launch runs on the calling thread.
const PARALLEL_FROM: u64 = 4096;

#[derive(Clone, Debug, Default)]
pub struct HostDevice {
    /// Memory it pretends to have free (for tests of the memory planner); `None`: the budget rules.
    pub free_memory: Option<u64>,
}

/// 8-byte aligned storage, so any `Pod` view of it is aligned.
pub struct HostBuffer(Box<[u64]>);

impl Device for HostDevice {
    type Buffer = HostBuffer;

    fn describe(&self) -> String {
        "host emulator (GPU kernels run on the CPU)".into()
    }

    fn free_memory(&self) -> Result<u64, DeviceError> {
        Ok(self.free_memory.unwrap_or(u64::MAX))
    }

    fn alloc_zeroed(&self, bytes: usize) -> Result<HostBuffer, DeviceError> {
        Ok(HostBuffer(
            vec![0u64; bytes.div_ceil(8).max(1)].into_boxed_slice(),
        ))
    }

    fn upload_bytes(&self, bytes: &[u8]) -> Result<HostBuffer, DeviceError> {
        let buf = self.alloc_zeroed(bytes.len())?;
        // Sound: the buffer holds at least `bytes.len()` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.0.as_ptr() as *mut u8, bytes.len())
        };
        Ok(buf)
    }

    fn map_host_bytes(&self, bytes: &[u8]) -> Result<HostBuffer, DeviceError> {
        self.upload_bytes(bytes)
    }

    fn download_bytes(&self, buf: &HostBuffer, bytes: usize) -> Result<Vec<u8>, DeviceError> {
        let all =
            unsafe { std::slice::from_raw_parts(buf.0.as_ptr() as *const u8, buf.0.len() * 8) };
        Ok(all[..bytes].to_vec())
    }

    fn address(&self, buf: &HostBuffer) -> u64 {
        buf.0.as_ptr() as u64
    }

    fn launch(&self, launch: &Launch, items: u64) -> Result<(), DeviceError> {
        let threads = launch.threads(items);
        let run = |gid: u64| unsafe { run_thread(launch, gid as usize) };
        if threads >= PARALLEL_FROM {
            (0..threads).into_par_iter().for_each(run);
        } else {
            (0..threads).for_each(run);
        }
        Ok(())
    }
}

/// One GPU thread.
///
/// # Safety
/// The launch's arguments describe live host buffers, as the pipeline builds them.
unsafe fn run_thread(launch: &Launch, gid: usize) {
    unsafe {
        match launch {
            Launch::Identify(a) => entry::identify_node_candidates(a, gid),
            Launch::CountWords(a) => entry::count_words(a, gid),
            Launch::WriteWords(a) => entry::write_words(a, gid),
            Launch::ScanChunks(a) => entry::scan_chunks(a, gid),
            Launch::AddChunkOffsets(a) => entry::add_chunk_offsets(a, gid),
            Launch::FilterNeighbours(a) => entry::filter_neighbour_candidates(a, gid),
            Launch::Refine(a) => entry::refine_candidates(a, gid),
            Launch::CountEdgeCandidates(a) => entry::count_edge_candidates(a, gid),
            Launch::WriteEdgeCandidates(a) => entry::write_edge_candidates(a, gid),
            Launch::CountExtensions(a) => entry::count_extensions(a, gid),
            Launch::WriteExtensions(a) => entry::write_extensions(a, gid),
        }
    }
}
