//! The GPU entry points of gpsense: one `extern "ptx-kernel"` function per kernel in
//! `gpsense_kernels::abi::KERNELS`, each taking its argument struct by value, computing its
//! work-item from the thread and block indices, and calling the same body the CPU executor runs.
//! Built for `nvptx64-nvidia-cuda` only (`cargo xtask ptx`).
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)
)]

#[cfg(target_arch = "nvptx64")]
mod entries;

/// Set to 1 by a thread whose kernel body failed a check (a bug): the host reads it after every
/// wait (`cuModuleGetGlobal("gpsense_fault")`) and reports the error.
#[cfg(target_arch = "nvptx64")]
#[unsafe(no_mangle)]
pub static mut gpsense_fault: u32 = 0;

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // The thread raises the flag and exits. A `trap` would leave a sticky error that poisons the
    // context for every later query.
    unsafe {
        core::ptr::write_volatile(&raw mut gpsense_fault, 1);
        core::arch::asm!("exit;", options(noreturn));
    }
}
