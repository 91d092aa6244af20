//! The GPU entry points of gpsense: one `extern "ptx-kernel"` function per kernel in
//! `gpsense_kernels::abi::KERNELS`, each taking its argument struct by value, computing its
//! work-item from the thread and block indices, and calling the same body the CPU executor runs.
//! Built for `nvptx64-nvidia-cuda` only (`cargo xtask ptx`).
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, stdarch_nvptx))]

#[cfg(target_arch = "nvptx64")]
mod entries;

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // An out-of-bounds index in a body ends the kernel with an error the host sees.
    unsafe { core::arch::nvptx::trap() }
}
