//! The CUDA device, through cudarc with the driver loaded at run time: the same binary starts on any
//! machine and uses a GPU only when `libcuda` and a device are found.

#[cfg(not(feature = "cuda"))]
use super::{Device, DeviceError, Launch};

/// Where `open` looks for the kernels' PTX, besides `GPSENSE_PTX`: `cargo xtask ptx` writes here.
pub const PTX_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/ptx");

/// The PTX file name for an architecture (`sm_90`), as `cargo xtask ptx` names it.
pub fn ptx_file_name(arch: &str) -> String {
    format!("gpsense_kernels.{arch}.ptx")
}

/// The newest built architecture a device of compute capability `major.minor` can run.
pub fn arch_for(major: i32, minor: i32) -> &'static str {
    if (major, minor) >= (9, 0) {
        "sm_90"
    } else {
        "sm_80"
    }
}

#[cfg(feature = "cuda")]
mod imp {
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use cudarc::driver::{
        sys, CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig,
        PinnedHostSlice, PushKernelArg,
    };

    use cudarc::driver::result;

    use super::super::{next_device_id, Counting, Device, DeviceError, Faults, Launch, BLOCK};
    use super::{arch_for, ptx_file_name, PTX_DIR};

    /// A kernel argument struct passed by value (they are `repr(C)` plain data, see `abi`).
    #[repr(transparent)]
    struct Arg<T>(T);
    unsafe impl<T: Copy> DeviceRepr for Arg<T> {}

    pub enum CudaBuffer {
        Device(CudaSlice<u8>),
        /// Pinned host memory mapped into the device's address space, and its device address.
        Mapped(PinnedHostSlice<u8>, u64),
    }

    pub struct CudaDevice {
        ctx: Arc<CudaContext>,
        /// The legacy default stream: every call's when users do not get streams of their own.
        stream: Arc<CudaStream>,
        /// `GPSENSE_GPU_STREAMS=1`: each user (a query alone, a batch) queues its work on a
        /// stream of its own (taken from `idle`, given back when it ends), so that users' work
        /// overlaps on the device instead of queueing behind each other's.
        own_streams: bool,
        idle: Mutex<Vec<Arc<CudaStream>>>,
        /// Which device, for the threads' current streams.
        id: u64,
        functions: HashMap<&'static str, CudaFunction>,
        name: String,
        counting: Counting,
        /// Device address of the kernels' fault flag.
        fault: u64,
        /// The faults seen, for the users running then.
        faults: Faults,
        /// `GPSENSE_GPU_MAPPED=1`: the graph goes to pinned host memory whatever its size, to
        /// measure that placement on a device where the graph would fit.
        force_mapped: bool,
    }

    fn driver(during: &str) -> impl Fn(cudarc::driver::DriverError) -> DeviceError + '_ {
        move |e| DeviceError::Driver {
            during: during.to_owned(),
            message: e.to_string(),
        }
    }

    impl CudaDevice {
        /// Opens device 0 and loads the kernels, or says why not (no driver, no device, no PTX).
        pub fn open() -> Result<Self, DeviceError> {
            // Without a driver library cudarc would panic on first use: check first.
            if !unsafe { sys::is_culib_present() } {
                return Err(DeviceError::Unavailable(
                    "no NVIDIA driver library (libcuda.so) found".into(),
                ));
            }
            let ctx = CudaContext::new(0).map_err(|e| {
                DeviceError::Unavailable(format!("driver found but no usable CUDA device ({e})"))
            })?;
            let own_streams = std::env::var("GPSENSE_GPU_STREAMS").is_ok_and(|v| v == "1");
            if own_streams {
                // The users order their own work (each ends when its stream is idle): per-use
                // events on every buffer would only add calls. With one stream (the default,
                // as measured on the H100 and H200) cudarc's tracking stays as it was.
                // SAFETY: before any buffer exists; see `user_ends` for the ordering kept.
                unsafe { ctx.disable_event_tracking() };
            }
            let (major, minor) = ctx
                .compute_capability()
                .map_err(driver("querying the compute capability"))?;
            let ptx = load_ptx(arch_for(major, minor))?;
            let module = ctx
                .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
                .map_err(driver("loading the kernels' PTX"))?;
            let mut functions = HashMap::new();
            for k in gpsense_kernels::abi::KERNELS {
                let f = module.load_function(k.name).map_err(driver(k.name))?;
                functions.insert(k.name, f);
            }
            let name = ctx.name().unwrap_or_else(|_| "CUDA device".into());
            let stream = ctx.default_stream();
            let fault = {
                use cudarc::driver::DevicePtr;
                let flag = module
                    .get_global("gpsense_fault", &stream)
                    .map_err(driver("finding the kernels' fault flag"))?;
                let (ptr, _sync) = flag.device_ptr(&stream);
                ptr
            };
            Ok(CudaDevice {
                ctx,
                stream,
                own_streams,
                idle: Mutex::new(Vec::new()),
                id: next_device_id(),
                functions,
                name: format!("{name} (sm_{major}{minor})"),
                counting: Counting::default(),
                fault,
                faults: Faults::default(),
                force_mapped: std::env::var("GPSENSE_GPU_MAPPED").is_ok_and(|v| v == "1"),
            })
        }
    }

    thread_local! {
        /// Per device, the streams of the users running on this thread (the last is current).
        static CURRENT: RefCell<Vec<(u64, Arc<CudaStream>)>> = const { RefCell::new(Vec::new()) };
    }

    impl CudaDevice {
        /// The calling thread's user's stream, or the default one.
        fn stream(&self) -> Arc<CudaStream> {
            if !self.own_streams {
                return self.stream.clone();
            }
            let mine = CURRENT.with(|c| {
                let c = c.borrow();
                c.iter()
                    .rev()
                    .find(|(id, _)| *id == self.id)
                    .map(|(_, s)| s.clone())
            });
            mine.unwrap_or_else(|| self.stream.clone())
        }

        /// Makes the context current on the calling thread, as cudarc's own calls do: the raw
        /// copies below need it, and a device's users call from threads of their own (a server's,
        /// a light query's pool).
        fn bound(&self) -> Result<(), DeviceError> {
            self.ctx
                .bind_to_thread()
                .map_err(driver("making the context current"))
        }

        /// After a wait: whether a kernel raised the fault flag (then it is cleared), or another
        /// user's wait saw one since this thread's user started ([`Faults`]).
        fn check_fault(&self) -> Result<(), DeviceError> {
            let mut flag = [0u32];
            unsafe { result::memcpy_dtoh_sync(&mut flag, self.fault) }
                .map_err(driver("reading the kernels' fault flag"))?;
            let raised = flag[0] != 0;
            if raised {
                unsafe { result::memset_d8_sync(self.fault, 0, 4) }
                    .map_err(driver("clearing the kernels' fault flag"))?;
            }
            if !self.faults.after_wait(raised) {
                return Ok(());
            }
            Err(DeviceError::Fault(
                "a kernel failed a bounds check on the device (in this query or in one running \
                 beside it on the device)"
                    .into(),
            ))
        }
    }

    /// The PTX text: `GPSENSE_PTX` (a file), the embedded copy (feature `embed-ptx`), or
    /// `target/ptx/` of the source tree.
    fn load_ptx(arch: &str) -> Result<String, DeviceError> {
        if let Some(path) = std::env::var_os("GPSENSE_PTX") {
            return std::fs::read_to_string(&path).map_err(|e| {
                DeviceError::Ptx(format!("GPSENSE_PTX={}: {e}", path.to_string_lossy()))
            });
        }
        if let Some(text) = embedded(arch) {
            return Ok(text.to_owned());
        }
        let path = std::path::Path::new(PTX_DIR).join(ptx_file_name(arch));
        std::fs::read_to_string(&path).map_err(|e| {
            DeviceError::Ptx(format!(
                "{}: {e}; run `cargo xtask ptx` or set GPSENSE_PTX",
                path.display()
            ))
        })
    }

    #[cfg(feature = "embed-ptx")]
    fn embedded(arch: &str) -> Option<&'static str> {
        match arch {
            "sm_90" => Some(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../target/ptx/gpsense_kernels.sm_90.ptx"
            ))),
            _ => Some(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../target/ptx/gpsense_kernels.sm_80.ptx"
            ))),
        }
    }

    #[cfg(not(feature = "embed-ptx"))]
    fn embedded(_arch: &str) -> Option<&'static str> {
        None
    }

    impl Device for CudaDevice {
        type Buffer = CudaBuffer;

        fn describe(&self) -> String {
            self.name.clone()
        }

        fn free_memory(&self) -> Result<u64, DeviceError> {
            let (free, _total) = self.ctx.mem_get_info().map_err(driver("cuMemGetInfo"))?;
            Ok(free as u64)
        }

        fn force_mapped(&self) -> bool {
            self.force_mapped
        }

        fn alloc_zeroed(&self, bytes: usize) -> Result<CudaBuffer, DeviceError> {
            self.counting.alloc();
            let slice = self
                .stream()
                .alloc_zeros::<u8>(bytes.max(16).next_multiple_of(16))
                .map_err(|e| match e.0 {
                    // Not a fault: other users hold the memory (the context stays usable).
                    sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY => {
                        DeviceError::OutOfMemory(format!("out of memory allocating {bytes} bytes"))
                    }
                    _ => driver("allocating device memory")(e),
                })?;
            Ok(CudaBuffer::Device(slice))
        }

        fn map_host_bytes(&self, bytes: &[u8]) -> Result<CudaBuffer, DeviceError> {
            let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
            let mut pinned = unsafe {
                self.ctx
                    .alloc_pinned_with_flags::<u8>(bytes.len().max(1), flags)
            }
            .map_err(driver("allocating pinned host memory"))?;
            let host = pinned
                .as_mut_slice()
                .map_err(driver("mapping pinned host memory"))?;
            host[..bytes.len()].copy_from_slice(bytes);
            let mut dptr: sys::CUdeviceptr = 0;
            let host_ptr = pinned
                .as_mut_ptr()
                .map_err(driver("mapping pinned host memory"))?;
            let status =
                unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dptr, host_ptr as *mut _, 0) };
            if status != sys::cudaError_enum::CUDA_SUCCESS {
                return Err(DeviceError::Driver {
                    during: "cuMemHostGetDevicePointer".into(),
                    message: format!("{status:?}"),
                });
            }
            Ok(CudaBuffer::Mapped(pinned, dptr))
        }

        fn write_bytes(
            &self,
            buf: &CudaBuffer,
            offset: usize,
            bytes: &[u8],
        ) -> Result<(), DeviceError> {
            self.bound()?;
            self.counting.up(bytes.len());
            let start = std::time::Instant::now();
            let written = match buf {
                CudaBuffer::Device(_) => unsafe {
                    // A pageable source is staged before the call returns.
                    result::memcpy_htod_async(
                        self.address(buf) + offset as u64,
                        bytes,
                        self.stream().cu_stream(),
                    )
                }
                .map_err(driver("copying to the device")),
                CudaBuffer::Mapped(..) => Err(DeviceError::Memory(
                    "host-mapped memory is written only when mapped".into(),
                )),
            };
            self.counting.write_took(start.elapsed());
            written
        }

        fn zero_bytes(
            &self,
            buf: &CudaBuffer,
            offset: usize,
            len: usize,
        ) -> Result<(), DeviceError> {
            self.bound()?;
            unsafe {
                result::memset_d8_async(
                    self.address(buf) + offset as u64,
                    0,
                    len,
                    self.stream().cu_stream(),
                )
            }
            .map_err(driver("zeroing device memory"))
        }

        fn read_bytes(
            &self,
            buf: &CudaBuffer,
            offset: usize,
            out: &mut [u8],
        ) -> Result<(), DeviceError> {
            self.bound()?;
            self.counting.down(out.len());
            let start = std::time::Instant::now();
            let stream = self.stream();
            unsafe {
                result::memcpy_dtoh_async(
                    out,
                    self.address(buf) + offset as u64,
                    stream.cu_stream(),
                )
            }
            .map_err(driver("copying from the device"))?;
            stream.synchronize().map_err(driver("synchronising"))?;
            self.counting.read_took(start.elapsed());
            self.check_fault()
        }

        fn counters(&self) -> crate::device::DeviceCounters {
            self.counting.snapshot()
        }

        fn user_starts(&self) {
            // A failure to bind shows at the user's first call, with its error.
            let _ = self.bound();
            self.faults.user_starts();
            if !self.own_streams {
                return;
            }
            let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            // Without a stream of its own (the driver refused one) it queues on the default one.
            let stream = idle.or_else(|| self.ctx.new_stream().ok());
            if let Some(stream) = stream {
                CURRENT.with(|c| c.borrow_mut().push((self.id, stream)));
            }
        }

        fn release(&self, buf: CudaBuffer) {
            // A buffer is freed on the stream it was allocated on: one from another user's
            // stream (an arena taken idle) would be freed there at once, and its memory handed
            // to another allocation while this user's queued work still uses it.
            if let CudaBuffer::Device(slice) = &buf {
                let here = self.stream();
                if self.own_streams && slice.stream().cu_stream() != here.cu_stream() {
                    let _ = here.synchronize();
                }
            }
            drop(buf);
        }

        fn user_ends(&self) {
            if !self.own_streams {
                return;
            }
            let mine = CURRENT.with(|c| {
                let mut c = c.borrow_mut();
                let at = c.iter().rposition(|(id, _)| *id == self.id)?;
                Some(c.remove(at).1)
            });
            let Some(stream) = mine else { return };
            // Its buffers may go to another user's stream next (an idle arena): what it queued
            // must be done first. A stream that fails to synchronise is not used again.
            if stream.synchronize().is_ok() {
                self.idle
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(stream);
            }
        }

        fn address(&self, buf: &CudaBuffer) -> u64 {
            match buf {
                CudaBuffer::Device(slice) => slice.device_ptr(&self.stream()).0,
                CudaBuffer::Mapped(_, dptr) => *dptr,
            }
        }

        fn launch(&self, launch: &Launch, items: u64) -> Result<(), DeviceError> {
            self.counting.launch();
            let start = std::time::Instant::now();
            let threads = launch.threads(items);
            if threads == 0 {
                return Ok(());
            }
            let sig = launch.sig();
            let f = self
                .functions
                .get(sig.name)
                .ok_or_else(|| DeviceError::Ptx(format!("kernel {} not loaded", sig.name)))?;
            let (blocks, block) =
                gpsense_kernels::abi::launch_config(items, sig.threads_per_item, BLOCK);
            let cfg = LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (block, 1, 1),
                shared_mem_bytes: 0,
            };
            let stream = self.stream();
            let mut builder = stream.launch_builder(f);
            macro_rules! go {
                ($a:expr) => {{
                    let arg = Arg(*$a);
                    builder.arg(&arg);
                    unsafe { builder.launch(cfg) }.map_err(driver(sig.name))?;
                }};
            }
            match launch {
                Launch::IdentifyNodes(a) => go!(a),
                Launch::CountWords(a) => go!(a),
                Launch::WriteWords(a) => go!(a),
                Launch::NodeTotals(a) => go!(a),
                Launch::AdjacencyBounds(a) => go!(a),
                Launch::ScanChunks(a) | Launch::AddChunkOffsets(a) => go!(a),
                Launch::MarkSteps(a) => go!(a),
                Launch::RefineNodes(a) => go!(a),
                Launch::CountEdgeLists(a) | Launch::WriteEdgeLists(a) => go!(a),
                Launch::ExtendWarp(a) => go!(a),
                Launch::ExtendWarpBatch(a) | Launch::ExtendWarpBindingsBatch(a) => go!(a),
                Launch::ExtendWarpBindings(a) => go!(a),
                Launch::PivotSegments(a) => go!(a),
                Launch::PivotSegmentsBatch(a) => go!(a),
                Launch::CountLeaves(a) => go!(a),
                Launch::CountLeavesBatch(a) => go!(a),
                Launch::TrustSimilarity(a) => go!(a),
                Launch::TrustOneHop(a) => go!(a),
                Launch::TrustExtend(a) => go!(a),
                Launch::TrustMerge(a) => go!(a),
                Launch::TrustSelect(a) => go!(a),
            }
            self.counting.launch_took(start.elapsed());
            Ok(())
        }
    }
}

#[cfg(feature = "cuda")]
pub use imp::{CudaBuffer, CudaDevice};

/// Without the `cuda` feature there is never a GPU.
#[cfg(not(feature = "cuda"))]
pub struct CudaDevice;

#[cfg(not(feature = "cuda"))]
impl CudaDevice {
    pub fn open() -> Result<Self, DeviceError> {
        Err(DeviceError::Unavailable(
            "this build has no CUDA support (built without the `cuda` feature)".into(),
        ))
    }
}

#[cfg(not(feature = "cuda"))]
impl Device for CudaDevice {
    type Buffer = ();
    fn describe(&self) -> String {
        String::new()
    }
    fn free_memory(&self) -> Result<u64, DeviceError> {
        Ok(0)
    }
    fn alloc_zeroed(&self, _: usize) -> Result<(), DeviceError> {
        Err(none())
    }
    fn map_host_bytes(&self, _: &[u8]) -> Result<(), DeviceError> {
        Err(none())
    }
    fn write_bytes(&self, _: &(), _: usize, _: &[u8]) -> Result<(), DeviceError> {
        Err(none())
    }
    fn zero_bytes(&self, _: &(), _: usize, _: usize) -> Result<(), DeviceError> {
        Err(none())
    }
    fn read_bytes(&self, _: &(), _: usize, _: &mut [u8]) -> Result<(), DeviceError> {
        Err(none())
    }
    fn address(&self, _: &()) -> u64 {
        0
    }
    fn launch(&self, _: &Launch, _: u64) -> Result<(), DeviceError> {
        Err(none())
    }
    fn counters(&self) -> super::DeviceCounters {
        super::DeviceCounters::default()
    }
}

#[cfg(not(feature = "cuda"))]
fn none() -> DeviceError {
    DeviceError::Unavailable("no CUDA support".into())
}
