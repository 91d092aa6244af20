//! Ctrl-C during a query that runs on the calling thread with the GIL released.
//!
//! Python handles SIGINT only in the main thread, between bytecodes: a query running in Rust would
//! be deaf to it until it ends. Running every query on a second thread, with the caller polling
//! for signals, costs a thread hand-off per query, which is more than a small anchored query takes.
//! So while such queries run, a SIGINT handler of our own sits in front of Python's: it raises the
//! flag the queries watch (`MatchOptions::cancel`), then calls Python's handler, which records the
//! signal as usual; the query stops, and the caller raises `KeyboardInterrupt`. The handler is
//! installed by the first running query and removed by the last. Where SIGINT is ignored or left
//! to its default action, nothing is installed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

/// The flag every query on a calling thread watches; set by a SIGINT, cleared when no such query
/// runs any more.
static FLAG: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// The flag as a `&'static` (for TruST's `Params`, which are `Copy`).
pub fn flag() -> &'static AtomicBool {
    &FLAG
}

/// Held while a query runs on the calling thread.
pub struct Guard {
    #[cfg(unix)]
    installed: bool,
}

impl Guard {
    pub fn new() -> Guard {
        Guard {
            #[cfg(unix)]
            installed: imp::enter(&FLAG),
        }
    }

    /// The flag to put in the query's `MatchOptions::cancel`.
    pub fn flag(&self) -> Arc<AtomicBool> {
        FLAG.clone()
    }

    /// Whether a SIGINT arrived while this guard was held.
    pub fn interrupted(&self) -> bool {
        FLAG.load(Ordering::Relaxed)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        #[cfg(unix)]
        if self.installed {
            imp::leave(&FLAG);
        }
    }
}

#[cfg(unix)]
mod imp {
    use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
    use std::sync::Mutex;

    /// Queries running, and the handler that was there before ours.
    static STATE: Mutex<(usize, Option<libc::sigaction>)> = Mutex::new((0, None));
    /// What the signal handler reads (it may not lock): the previous handler's address, whether
    /// it takes three arguments, and the flag to raise.
    static PREVIOUS: AtomicUsize = AtomicUsize::new(0);
    static PREVIOUS_SIGINFO: AtomicBool = AtomicBool::new(false);
    static TARGET: AtomicPtr<AtomicBool> = AtomicPtr::new(std::ptr::null_mut());

    extern "C" fn on_sigint(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        let target = TARGET.load(Ordering::SeqCst);
        if !target.is_null() {
            // SAFETY: points into `FLAG`, a static that is never freed.
            unsafe { (*target).store(true, Ordering::SeqCst) };
        }
        let previous = PREVIOUS.load(Ordering::SeqCst);
        if previous == libc::SIG_DFL || previous == libc::SIG_IGN {
            return;
        }
        // SAFETY: `previous` is the handler sigaction reported for SIGINT, with the argument list
        // its SA_SIGINFO flag says.
        unsafe {
            if PREVIOUS_SIGINFO.load(Ordering::SeqCst) {
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(previous);
                f(sig, info, ctx);
            } else {
                let f: extern "C" fn(libc::c_int) = std::mem::transmute(previous);
                f(sig);
            }
        }
    }

    /// A query starts: the first one installs the handler. Returns whether this query must call
    /// `leave`.
    pub fn enter(flag: &std::sync::Arc<AtomicBool>) -> bool {
        let mut state = STATE.lock().unwrap_or_else(|p| p.into_inner());
        if state.0 > 0 {
            state.0 += 1;
            return true;
        }
        // SAFETY: reading and setting the disposition of SIGINT with valid structures.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGINT, std::ptr::null(), &mut old) != 0 {
                return false;
            }
            if old.sa_sigaction == libc::SIG_DFL || old.sa_sigaction == libc::SIG_IGN {
                return false;
            }
            PREVIOUS.store(old.sa_sigaction, Ordering::SeqCst);
            PREVIOUS_SIGINFO.store(old.sa_flags & libc::SA_SIGINFO != 0, Ordering::SeqCst);
            TARGET.store(std::sync::Arc::as_ptr(flag).cast_mut(), Ordering::SeqCst);
            let mut ours: libc::sigaction = std::mem::zeroed();
            ours.sa_sigaction = on_sigint as *const () as usize;
            ours.sa_mask = old.sa_mask;
            ours.sa_flags = libc::SA_SIGINFO | (old.sa_flags & libc::SA_ONSTACK);
            if libc::sigaction(libc::SIGINT, &ours, std::ptr::null_mut()) != 0 {
                return false;
            }
            *state = (1, Some(old));
        }
        true
    }

    /// A query ends: the last one puts the previous handler back and clears the flag.
    pub fn leave(flag: &AtomicBool) {
        let mut state = STATE.lock().unwrap_or_else(|p| p.into_inner());
        state.0 = state.0.saturating_sub(1);
        if state.0 > 0 {
            return;
        }
        if let Some(old) = state.1.take() {
            // SAFETY: restoring the disposition read in `enter`.
            unsafe { libc::sigaction(libc::SIGINT, &old, std::ptr::null_mut()) };
        }
        flag.store(false, Ordering::SeqCst);
    }
}
