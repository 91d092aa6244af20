//! Where kernels run: a [`Device`] allocates buffers, copies data and launches the kernels of
//! `gpsense_kernels::abi`. Two implementations: [`host::HostDevice`], an emulator that runs every
//! launch's threads on the CPU through the very functions the PTX entry points call (so the GPU
//! pipeline is tested without a GPU), and [`cuda::CudaDevice`] (cudarc, the driver loaded at run time).
//! The layers follow cudarc's: raw launches at the bottom, typed buffers ([`Buf`]) above, and the
//! query pipeline (`gpu_pipeline`) on top; nothing above this module touches raw addresses.

pub mod cuda;
pub mod host;
pub mod memory;

use std::marker::PhantomData;

use gpsense_kernels::abi::{self, DevSlice, KernelSig};
use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DeviceError {
    #[error("no GPU: {0}")]
    Unavailable(String),
    #[error("GPU error in {during}: {message}")]
    Driver { during: String, message: String },
    #[error("the kernels' PTX is missing: {0}")]
    Ptx(String),
    #[error("device memory: {0}")]
    Memory(String),
}

/// Plain data that may be copied to and from a device byte for byte.
///
/// # Safety
/// Implementors are `Copy`, contain no pointers, padding or invalid bit patterns.
pub unsafe trait Pod: Copy + Send + Sync + 'static {}
unsafe impl Pod for u8 {}
unsafe impl Pod for u16 {}
unsafe impl Pod for u32 {}
unsafe impl Pod for u64 {}
unsafe impl Pod for gpsense_kernels::filter::Need {}
unsafe impl Pod for gpsense_kernels::filter::Incident {}
unsafe impl Pod for gpsense_kernels::join::Check {}

/// One kernel launch: the kernel and its argument struct.
#[derive(Clone, Copy, Debug)]
pub enum Launch {
    Identify(abi::IdentifyArgs),
    CountWords(abi::CountWordsArgs),
    WriteWords(abi::WriteWordsArgs),
    ScanChunks(abi::ScanArgs),
    AddChunkOffsets(abi::ScanArgs),
    FilterNeighbours(abi::FilterNeighboursArgs),
    Refine(abi::RefineArgs),
    CountEdgeCandidates(abi::EdgeCandidatesArgs),
    WriteEdgeCandidates(abi::EdgeCandidatesArgs),
    CountExtensions(abi::ExtendArgs),
    WriteExtensions(abi::ExtendArgs),
}

impl Launch {
    /// The kernel's entry in the ABI table.
    pub fn sig(&self) -> &'static KernelSig {
        let name = match self {
            Launch::Identify(_) => "identify_node_candidates",
            Launch::CountWords(_) => "count_words",
            Launch::WriteWords(_) => "write_words",
            Launch::ScanChunks(_) => "scan_chunks",
            Launch::AddChunkOffsets(_) => "add_chunk_offsets",
            Launch::FilterNeighbours(_) => "filter_neighbour_candidates",
            Launch::Refine(_) => "refine_candidates",
            Launch::CountEdgeCandidates(_) => "count_edge_candidates",
            Launch::WriteEdgeCandidates(_) => "write_edge_candidates",
            Launch::CountExtensions(_) => "count_extensions",
            Launch::WriteExtensions(_) => "write_extensions",
        };
        abi::KERNELS
            .iter()
            .find(|k| k.name == name)
            .expect("every launch is in abi::KERNELS")
    }

    /// Threads to start for `items` work-items.
    pub fn threads(&self, items: u64) -> u64 {
        items.saturating_mul(self.sig().threads_per_item as u64)
    }
}

/// A device: buffers of bytes, copies, launches.
pub trait Device: Sync {
    type Buffer: Send + Sync;

    /// What the device is, for messages (`NVIDIA H100 80GB HBM3`, `host emulator`).
    fn describe(&self) -> String;
    /// Free device memory in bytes.
    fn free_memory(&self) -> Result<u64, DeviceError>;
    fn alloc_zeroed(&self, bytes: usize) -> Result<Self::Buffer, DeviceError>;
    fn upload_bytes(&self, bytes: &[u8]) -> Result<Self::Buffer, DeviceError>;
    /// Host memory the device reads directly (pinned and mapped): the paper's "CPU memory" mode for
    /// a graph larger than device memory.
    fn map_host_bytes(&self, bytes: &[u8]) -> Result<Self::Buffer, DeviceError>;
    fn download_bytes(&self, buf: &Self::Buffer, bytes: usize) -> Result<Vec<u8>, DeviceError>;
    /// The buffer's device address.
    fn address(&self, buf: &Self::Buffer) -> u64;
    /// Runs `launch` over `items` work-items and waits for it.
    fn launch(&self, launch: &Launch, items: u64) -> Result<(), DeviceError>;
}

/// A typed device buffer of `len` elements.
pub struct Buf<D: Device, T: Pod> {
    raw: D::Buffer,
    len: usize,
    marker: PhantomData<T>,
}

impl<D: Device, T: Pod> Buf<D, T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The kernel-side description of elements `start..end`.
    pub fn part(&self, dev: &D, start: usize, end: usize) -> DevSlice {
        assert!(start <= end && end <= self.len, "buffer part out of range");
        DevSlice {
            ptr: dev.address(&self.raw) + (start * size_of::<T>()) as u64,
            len: (end - start) as u64,
        }
    }

    pub fn slice(&self, dev: &D) -> DevSlice {
        self.part(dev, 0, self.len)
    }
}

fn as_bytes<T: Pod>(data: &[T]) -> &[u8] {
    // Sound for Pod: no padding, no pointers.
    unsafe { std::slice::from_raw_parts(data.as_ptr() as *const u8, std::mem::size_of_val(data)) }
}

pub fn upload<D: Device, T: Pod>(dev: &D, data: &[T]) -> Result<Buf<D, T>, DeviceError> {
    Ok(Buf {
        raw: dev.upload_bytes(as_bytes(data))?,
        len: data.len(),
        marker: PhantomData,
    })
}

pub fn map_host<D: Device, T: Pod>(dev: &D, data: &[T]) -> Result<Buf<D, T>, DeviceError> {
    Ok(Buf {
        raw: dev.map_host_bytes(as_bytes(data))?,
        len: data.len(),
        marker: PhantomData,
    })
}

pub fn zeros<D: Device, T: Pod>(dev: &D, len: usize) -> Result<Buf<D, T>, DeviceError> {
    Ok(Buf {
        raw: dev.alloc_zeroed(len * size_of::<T>())?,
        len,
        marker: PhantomData,
    })
}

pub fn download<D: Device, T: Pod>(dev: &D, buf: &Buf<D, T>) -> Result<Vec<T>, DeviceError> {
    let bytes = dev.download_bytes(&buf.raw, buf.len * size_of::<T>())?;
    let mut out: Vec<T> = Vec::with_capacity(buf.len);
    // Sound for Pod: every bit pattern is valid; the copy fills exactly `len` elements.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.as_mut_ptr() as *mut u8, bytes.len());
        out.set_len(buf.len);
    }
    Ok(out)
}
