//! Keeps the bench harness off the core an engine runs on. The harness reads gpsense's runner
//! line by line (one line per query, so that a time-out names its query) and parses each line as it
//! comes; woken on the runner's core, it preempted the query after it: on HPRD (ten queries per
//! process) a chunk's second and third queries took 0.05-0.07 ms against 0.03 for the later ones,
//! with 15-40 of 400 over 0.1 ms, and the suite's sum was 1.4-1.8x what it was with the harness on
//! a core of its own. The peers write their output at exit, so no harness work ever met theirs.
//!
//! Two measures keep them apart: the reader leaves the runner's lines in the pipe for a batch
//! interval after each wake-up (`exec::forward_lines`), so that the harness wakes at most once per
//! 20 ms, and the harness runs pinned to one CPU, so that what it does run never lands on the
//! engine's core while another is free.
//!
//! [`Pinned::harness`] pins the calling thread (and the threads it starts later) to the last CPU
//! it may use; [`Pinned::engine`] gives a command's process every CPU back.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// The harness's CPUs before it was pinned; they are restored on drop.
pub struct Pinned {
    all: libc::cpu_set_t,
}

const SET_SIZE: usize = std::mem::size_of::<libc::cpu_set_t>();

/// The calling thread's CPUs.
fn allowed() -> Option<libc::cpu_set_t> {
    // SAFETY: `cpu_set_t` is plain bits; all zeros is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable `cpu_set_t` of `SET_SIZE` bytes.
    let r = unsafe { libc::sched_getaffinity(0, SET_SIZE, &mut set) };
    (r == 0).then_some(set)
}

fn has(set: &libc::cpu_set_t, cpu: usize) -> bool {
    // SAFETY: in bounds: `cpu` is below `CPU_SETSIZE`, the set's size in bits.
    cpu < libc::CPU_SETSIZE as usize && unsafe { libc::CPU_ISSET(cpu, set) }
}

#[cfg(test)]
fn count(set: &libc::cpu_set_t) -> usize {
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| has(set, c))
        .count()
}

fn set_affinity(set: &libc::cpu_set_t) -> bool {
    // SAFETY: `set` is a valid `cpu_set_t` of `SET_SIZE` bytes; 0 is the calling thread.
    unsafe { libc::sched_setaffinity(0, SET_SIZE, set) == 0 }
}

impl Pinned {
    /// Pins the calling thread to the last of its CPUs, when it has two or more (else `None`: one
    /// core is shared whatever is done). Returns the guard and that CPU.
    pub fn harness() -> Option<(Pinned, usize)> {
        let all = allowed()?;
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| has(&all, c))
            .collect();
        let (&last, rest) = cpus.split_last()?;
        if rest.is_empty() {
            return None;
        }
        // SAFETY: as in `allowed`.
        let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: in bounds: `last` came from a set of `CPU_SETSIZE` bits.
        unsafe { libc::CPU_SET(last, &mut one) };
        set_affinity(&one).then_some((Pinned { all }, last))
    }

    /// Lets the process `cmd` starts run on every CPU the harness had.
    pub fn engine(&self, cmd: &mut Command) {
        let all = self.all;
        // SAFETY: the closure runs in the child between fork and exec and makes one system call
        // (async-signal-safe) on its own copy of the set.
        unsafe {
            cmd.pre_exec(move || {
                if set_affinity(&all) {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        set_affinity(&self.all);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_harness_starts_engines_on_every_cpu_and_gets_them_back() {
        let before = allowed().expect("affinity readable");
        // Pinned on a thread of its own: the test harness's other threads keep their CPUs.
        std::thread::spawn(move || {
            let Some((pinned, cpu)) = Pinned::harness() else {
                // One CPU: nothing to pin.
                assert_eq!(count(&before), 1);
                return;
            };
            let now = allowed().expect("affinity readable");
            assert_eq!(count(&now), 1);
            assert!(has(&now, cpu));
            let mut cmd = Command::new("sh");
            cmd.args(["-c", "grep Cpus_allowed_list /proc/self/status"]);
            pinned.engine(&mut cmd);
            let out = cmd.output().expect("sh runs");
            let child = String::from_utf8_lossy(&out.stdout).to_string();
            let mut plain = Command::new("sh");
            plain.args(["-c", "grep Cpus_allowed_list /proc/self/status"]);
            let pinned_child =
                String::from_utf8_lossy(&plain.output().expect("sh runs").stdout).to_string();
            assert_ne!(child, pinned_child, "the engine's CPUs: {child}");
            assert_eq!(
                pinned_child.trim().rsplit('\t').next(),
                Some(cpu.to_string().as_str())
            );
            drop(pinned);
            assert_eq!(
                count(&allowed().expect("affinity readable")),
                count(&before)
            );
        })
        .join()
        .expect("the pinned thread passes");
    }
}
