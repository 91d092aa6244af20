//! Binary snapshots: a fixed header, then the graph encoded with bincode 2 (serde, fixed-width
//! integers), guarded by an XXH3 checksum.
//!
//! Layout (little-endian):
//! ```text
//! 0   8  magic  b"GPSENSE\0"
//! 8   4  format version (SNAPSHOT_VERSION)
//! 12  4  kind (what the body holds: 1 = graph; other crates define more)
//! 16  8  body length in bytes
//! 24  8  XXH3-64 of the body
//! 32  .. body
//! ```
//! Loading reads the file once, checks the header, the length against the file size and the checksum
//! before decoding, then validates the decoded value's invariants: a truncated, corrupted, crafted or
//! wrong-version file is an error, never a panic or an allocation larger than the file.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{de::DeserializeOwned, Serialize};
use thiserror::Error;

use crate::{GraphError, KnowledgeGraph};

pub const MAGIC: [u8; 8] = *b"GPSENSE\0";
pub const SNAPSHOT_VERSION: u32 = 2;
pub const HEADER_LEN: usize = 32;
/// The `kind` of a snapshot holding one [`KnowledgeGraph`].
pub const KIND_GRAPH: u32 = 1;

#[derive(Debug, Error)]
pub enum SnapshotError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is {what}: write the snapshot to a regular file")]
    NotAFile { path: PathBuf, what: &'static str },
    #[error("{path}: not a gpsense snapshot (bad magic bytes)")]
    BadMagic { path: PathBuf },
    #[error("{path}: snapshot format version {found}, this build reads version {expected}; re-run `gpsense ingest`")]
    Version {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
    #[error("{path}: snapshot holds kind {found}, expected kind {expected}")]
    Kind {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
    #[error("{path}: truncated snapshot ({found} bytes, shorter than the {expected}-byte header)")]
    TruncatedHeader {
        path: PathBuf,
        expected: u64,
        found: u64,
    },
    #[error("{path}: truncated snapshot (header says {expected} body bytes, file has {found})")]
    Truncated {
        path: PathBuf,
        expected: u64,
        found: u64,
    },
    #[error("{path}: checksum mismatch: the snapshot is corrupted")]
    Checksum { path: PathBuf },
    #[error("{path}: cannot decode snapshot body: {reason}")]
    Decode { path: PathBuf, reason: String },
    #[error("{path}: snapshot is inconsistent: {source}")]
    Invalid { path: PathBuf, source: GraphError },
    #[error("cannot encode snapshot: {0}")]
    Encode(String),
}

/// The checksum stored in the header: XXH3-64 of the body.
pub fn checksum(body: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(body)
}

fn config() -> impl bincode::config::Config {
    bincode::config::standard()
        .with_little_endian()
        .with_fixed_int_encoding()
}

/// Encodes `value` with the snapshot header into a byte vector.
pub fn encode<T: Serialize>(value: &T, kind: u32) -> Result<Vec<u8>, SnapshotError> {
    let mut bytes = vec![0u8; HEADER_LEN];
    bincode::serde::encode_into_std_write(value, &mut bytes, config())
        .map_err(|e| SnapshotError::Encode(e.to_string()))?;
    let body_len = (bytes.len() - HEADER_LEN) as u64;
    let checksum = checksum(&bytes[HEADER_LEN..]);
    bytes[0..8].copy_from_slice(&MAGIC);
    bytes[8..12].copy_from_slice(&SNAPSHOT_VERSION.to_le_bytes());
    bytes[12..16].copy_from_slice(&kind.to_le_bytes());
    bytes[16..24].copy_from_slice(&body_len.to_le_bytes());
    bytes[24..32].copy_from_slice(&checksum.to_le_bytes());
    Ok(bytes)
}

/// Checks the header and checksum of `bytes` (a whole file) and decodes the body.
pub fn decode<T: DeserializeOwned>(
    bytes: &[u8],
    kind: u32,
    path: &Path,
) -> Result<T, SnapshotError> {
    let path_buf = || path.to_path_buf();
    if bytes.len() < HEADER_LEN {
        if bytes.len() >= 8 && bytes[..8] != MAGIC {
            return Err(SnapshotError::BadMagic { path: path_buf() });
        }
        return Err(SnapshotError::TruncatedHeader {
            path: path_buf(),
            expected: HEADER_LEN as u64,
            found: bytes.len() as u64,
        });
    }
    let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
    if bytes[..8] != MAGIC {
        return Err(SnapshotError::BadMagic { path: path_buf() });
    }
    if u32_at(8) != SNAPSHOT_VERSION {
        return Err(SnapshotError::Version {
            path: path_buf(),
            found: u32_at(8),
            expected: SNAPSHOT_VERSION,
        });
    }
    if u32_at(12) != kind {
        return Err(SnapshotError::Kind {
            path: path_buf(),
            found: u32_at(12),
            expected: kind,
        });
    }
    let body = &bytes[HEADER_LEN..];
    if u64_at(16) != body.len() as u64 {
        return Err(SnapshotError::Truncated {
            path: path_buf(),
            expected: u64_at(16),
            found: body.len() as u64,
        });
    }
    if checksum(body) != u64_at(24) {
        return Err(SnapshotError::Checksum { path: path_buf() });
    }
    // serde's sequence visitors preallocate cautiously, so a crafted length cannot allocate more than
    // a small multiple of the body before the reader runs out of bytes.
    let (value, used) =
        bincode::serde::decode_from_slice(body, config()).map_err(|e| SnapshotError::Decode {
            path: path_buf(),
            reason: e.to_string(),
        })?;
    if used != body.len() {
        return Err(SnapshotError::Decode {
            path: path_buf(),
            reason: format!("{} trailing bytes", body.len() - used),
        });
    }
    Ok(value)
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, synced, then renamed.
///
/// - Only a regular file is replaced: a device, FIFO or directory at `path` is refused (renaming
///   over `/dev/null` would replace it with a file). A symlink is written through: the file it
///   points to is replaced and the link stays.
/// - A new file gets the mode the umask gives (0666 less the umask), a rewritten one keeps its mode.
/// - The temporary file is `.NAME.gpsense-tmp.PID`, locked (`flock`) while it is written: a write
///   into a directory first removes every such file there, whatever its NAME, that a killed
///   process left (see `remove_stale_temps`).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SnapshotError> {
    let io = |source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    };
    let target = write_through(path).map_err(io)?;
    let old = std::fs::metadata(&target).ok();
    if let Some(m) = &old {
        if !m.is_file() {
            return Err(SnapshotError::NotAFile {
                path: path.to_path_buf(),
                what: file_kind(m),
            });
        }
    }
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("the directory {} does not exist", dir.display()),
        )));
    }
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    remove_stale_temps(&dir);
    let tmp = dir.join(format!(".{name}{TEMP_MARK}{}", std::process::id()));
    signals::writing(Some(&tmp));
    let result = write_new(&tmp, bytes, old.map(|m| m.permissions())).and_then(|locked| {
        test_pause();
        // Renamed while still locked: a cleaner never takes it for an orphan.
        let renamed = std::fs::rename(&tmp, &target);
        drop(locked);
        renamed
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    signals::writing(None);
    result.map_err(io)
}

/// Debug builds only: `GPSENSE_TEST_WRITE_PAUSE_MS` holds a write between its temporary file and
/// the rename, so that a test can interrupt it there.
fn test_pause() {
    if cfg!(debug_assertions) {
        if let Some(ms) = std::env::var("GPSENSE_TEST_WRITE_PAUSE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
    }
}

/// SIGINT and SIGTERM during a write remove its temporary file, then end the process as the
/// signal would have.
pub mod signals {
    use std::path::Path;

    #[cfg(unix)]
    static WRITING: std::sync::atomic::AtomicPtr<libc::c_char> =
        std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

    /// Installs the handlers (the CLI calls this first thing).
    pub fn remove_temporaries_on_signals() {
        #[cfg(unix)]
        for sig in [libc::SIGINT, libc::SIGTERM] {
            // Sound: the handler only loads an atomic and calls async-signal-safe functions.
            unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
        }
    }

    /// The temporary file being written (`None` once it is renamed or removed).
    pub(super) fn writing(path: Option<&Path>) {
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let c = path.and_then(|p| std::ffi::CString::new(p.as_os_str().as_bytes()).ok());
            // Leaked, never freed: a handler may hold the old pointer (a few bytes per write).
            let ptr = c.map_or(std::ptr::null_mut(), |c| c.into_raw());
            WRITING.store(ptr, std::sync::atomic::Ordering::SeqCst);
        }
        #[cfg(not(unix))]
        let _ = path;
    }

    #[cfg(unix)]
    extern "C" fn on_signal(sig: libc::c_int) {
        let p = WRITING.load(std::sync::atomic::Ordering::SeqCst);
        // Sound: `unlink`, `signal` and `raise` are async-signal-safe; `p` is a leaked C string.
        unsafe {
            if !p.is_null() {
                libc::unlink(p);
            }
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
}

/// The file a write to `path` replaces: `path`, or what its symlinks lead to.
fn write_through(path: &Path) -> std::io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// What a temporary file's name holds between the target's name and the writer's process id.
const TEMP_MARK: &str = ".gpsense-tmp.";

/// Creates `tmp` (mode from the umask, or `mode`) and locks it where the file system can, writes
/// and syncs `bytes`; returns the open file, whose lock lasts until it is dropped.
fn write_new(
    tmp: &Path,
    bytes: &[u8],
    mode: Option<std::fs::Permissions>,
) -> std::io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)?;
    // Best effort: a file system without locks keeps the process-id test alone.
    let _ = lock(&file, true);
    let mut w = BufWriter::new(&file);
    w.write_all(bytes)?;
    w.flush()?;
    drop(w);
    if let Some(mode) = mode {
        file.set_permissions(mode)?;
    }
    file.sync_all()?;
    Ok(file)
}

/// An exclusive `flock` on `file`: waiting for it (`wait`), or failing at once when another open
/// file holds it. Released when the file is closed, so a killed writer holds none.
fn lock(file: &File, wait: bool) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let how = if wait {
        libc::LOCK_EX
    } else {
        libc::LOCK_EX | libc::LOCK_NB
    };
    // SAFETY: `flock` on a descriptor this `File` owns for the whole call.
    if unsafe { libc::flock(file.as_raw_fd(), how) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The process id in a temporary file's name, `.NAME.gpsense-tmp.PID` (any NAME).
fn temp_pid(name: &str) -> Option<u32> {
    let (target, pid) = name.strip_prefix('.')?.rsplit_once(TEMP_MARK)?;
    if target.is_empty() || pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// Removes the temporary files that killed writes left in `dir`, whatever output they were for: a
/// regular file named `.NAME.gpsense-tmp.PID` whose process is not running here (no `/proc/PID`)
/// and whose lock nobody holds (a live writer holds it until its rename, which also covers one on
/// another machine sharing the directory, whose process id means nothing here). Where `/proc` is
/// missing nothing is removed. A file that cannot be opened or removed is left as it is.
fn remove_stale_temps(dir: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(temp_pid) else {
            continue;
        };
        let running = pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists();
        if running || !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let Ok(file) = File::open(e.path()) else {
            continue;
        };
        // A live writer holds its lock until the rename; a file system without locks leaves the
        // process-id test alone.
        let held = lock(&file, false).is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock);
        if !held {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// What a non-regular file is, for the message.
fn file_kind(m: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Reads a whole snapshot file.
pub fn read_file(path: &Path) -> Result<Vec<u8>, SnapshotError> {
    std::fs::read(path).map_err(|source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    })
}

impl KnowledgeGraph {
    /// The snapshot bytes of this graph (header included).
    pub fn to_snapshot_bytes(&self) -> Result<Vec<u8>, SnapshotError> {
        encode(self, KIND_GRAPH)
    }

    /// Decodes and validates a snapshot held in memory; `origin` names it in errors.
    pub fn from_snapshot_bytes(bytes: &[u8], origin: &Path) -> Result<Self, SnapshotError> {
        let graph: KnowledgeGraph = decode(bytes, KIND_GRAPH, origin)?;
        graph.validate().map_err(|source| SnapshotError::Invalid {
            path: origin.to_path_buf(),
            source,
        })?;
        Ok(graph)
    }

    /// Writes a snapshot atomically.
    pub fn save(&self, path: &Path) -> Result<(), SnapshotError> {
        write_atomic(path, &self.to_snapshot_bytes()?)
    }

    /// Loads and validates a snapshot.
    pub fn load(path: &Path) -> Result<Self, SnapshotError> {
        Self::from_snapshot_bytes(&read_file(path)?, path)
    }
}

/// Opens a file for reading, for callers that want the same error shape.
pub fn open(path: &Path) -> Result<File, SnapshotError> {
    File::open(path).map_err(|source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GraphBuilder;

    fn graph() -> KnowledgeGraph {
        let mut b = GraphBuilder::new();
        b.add_triple("cat", "IsA", "animal", 1.0).unwrap();
        b.add_triple("dog", "IsA", "animal", 0.5).unwrap();
        b.add_triple("dog", "AtLocation", "home", 1.0).unwrap();
        b.build().unwrap().0
    }

    #[test]
    fn round_trips_through_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.gps");
        let g = graph();
        g.save(&path).unwrap();
        let back = KnowledgeGraph::load(&path).unwrap();
        assert_eq!(back, g);
        assert_eq!(back.node_id("dog"), g.node_id("dog"));
    }

    /// A write into a directory removes what killed writes of any output left there (it removed
    /// only those of its own output name), and nothing else: not the temporary file of a running
    /// process, nor one whose lock a writer holds (on another machine sharing the directory, its
    /// process id means nothing here), nor names that only look alike.
    #[test]
    fn a_write_removes_the_orphans_of_killed_writes_in_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        // Above Linux's largest process id (2^22): never running.
        let dead = 99_999_999;
        let orphans = [
            format!(".other.gps{TEMP_MARK}{dead}"),
            format!(".g.gps{TEMP_MARK}{dead}"),
            format!(".dump.nt{TEMP_MARK}{}", dead + 1),
        ];
        let kept = [
            format!(".running.gps{TEMP_MARK}1"),
            format!(".x{TEMP_MARK}12a"),
            format!("x{TEMP_MARK}{dead}"),
            format!(".{TEMP_MARK}{dead}"),
            format!(".x{TEMP_MARK}+{dead}"),
        ];
        for name in orphans.iter().chain(&kept) {
            std::fs::write(at(name), b"partial").unwrap();
        }
        let locked_name = format!(".remote.gps{TEMP_MARK}{dead}");
        std::fs::write(at(&locked_name), b"partial").unwrap();
        let held = File::open(at(&locked_name)).unwrap();
        lock(&held, true).unwrap();
        let directory = format!(".d{TEMP_MARK}{dead}");
        std::fs::create_dir(at(&directory)).unwrap();
        graph().save(&at("g.gps")).unwrap();
        for name in &orphans {
            assert!(!at(name).exists(), "{name} is still there");
        }
        for name in kept.iter().chain([&locked_name, &directory]) {
            assert!(at(name).exists(), "{name} was removed");
        }
        // Once its writer is gone (the lock with it), the next write removes it.
        drop(held);
        graph().save(&at("g.gps")).unwrap();
        assert!(!at(&locked_name).exists());
        assert!(KnowledgeGraph::load(&at("g.gps")).is_ok());
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = graph().to_snapshot_bytes().unwrap();
        for len in 0..bytes.len() {
            let err =
                KnowledgeGraph::from_snapshot_bytes(&bytes[..len], Path::new("t.gps")).unwrap_err();
            let header = len < HEADER_LEN;
            assert!(
                matches!(
                    (&err, header),
                    (SnapshotError::TruncatedHeader { .. }, true)
                        | (SnapshotError::Truncated { .. }, false)
                ),
                "{len}: {err}"
            );
        }
        // A file shorter than the header is not said to declare a body length.
        let err =
            KnowledgeGraph::from_snapshot_bytes(&bytes[..20], Path::new("t.gps")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.gps: truncated snapshot (20 bytes, shorter than the 32-byte header)"
        );
    }

    #[test]
    fn every_flipped_byte_is_an_error() {
        let bytes = graph().to_snapshot_bytes().unwrap();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert!(
                KnowledgeGraph::from_snapshot_bytes(&bad, Path::new("c.gps")).is_err(),
                "byte {i}"
            );
        }
    }

    #[test]
    fn wrong_version_and_magic_are_named() {
        let mut bytes = graph().to_snapshot_bytes().unwrap();
        bytes[8] = 99;
        let err = KnowledgeGraph::from_snapshot_bytes(&bytes, Path::new("v.gps")).unwrap_err();
        assert!(err.to_string().contains("version 99"), "{err}");
        bytes[0] = b'X';
        let err = KnowledgeGraph::from_snapshot_bytes(&bytes, Path::new("m.gps")).unwrap_err();
        assert!(matches!(err, SnapshotError::BadMagic { .. }));
    }

    /// A body with a valid checksum but a huge claimed length must fail without allocating it.
    #[test]
    fn crafted_lengths_fail_cleanly() {
        let mut body = Vec::new();
        body.extend_from_slice(&u64::MAX.to_le_bytes()); // length of the first string
        body.extend_from_slice(b"abc");
        let mut bytes = vec![0u8; HEADER_LEN];
        bytes.extend_from_slice(&body);
        bytes[0..8].copy_from_slice(&MAGIC);
        bytes[8..12].copy_from_slice(&SNAPSHOT_VERSION.to_le_bytes());
        bytes[12..16].copy_from_slice(&KIND_GRAPH.to_le_bytes());
        bytes[16..24].copy_from_slice(&(body.len() as u64).to_le_bytes());
        bytes[24..32].copy_from_slice(&xxhash_rust::xxh3::xxh3_64(&body).to_le_bytes());
        let err = KnowledgeGraph::from_snapshot_bytes(&bytes, Path::new("x.gps")).unwrap_err();
        assert!(matches!(err, SnapshotError::Decode { .. }), "{err}");
    }

    /// Valid CSRs on their own, but the incoming one is not the outgoing one transposed.
    #[test]
    fn incoming_that_does_not_mirror_outgoing_is_rejected() {
        let g = graph();
        let mut checked = 0;
        for mutate in [0usize, 1] {
            let mut bad = g.clone();
            let last = bad.inc.labels.len() - 1;
            match mutate {
                // Another relation on a one-entry list keeps it sorted.
                0 => {
                    bad.inc.labels[last] = (bad.inc.labels[last] + 1) % bad.relation_count() as u16
                }
                // A wrong source.
                _ => bad.inc.targets[last] = (bad.inc.targets[last] + 1) % bad.node_count() as u32,
            }
            if bad
                .inc
                .validate(bad.node_count(), bad.relation_count())
                .is_err()
            {
                continue; // broke the list's own order: caught earlier, not the case under test
            }
            let err = bad.validate().unwrap_err();
            assert!(err.to_string().contains("mirror"), "{err}");
            checked += 1;
        }
        assert_eq!(checked, 2, "both mutations must reach the mirror check");
    }

    #[test]
    fn crafted_inconsistent_graph_is_rejected() {
        let mut g = graph();
        g.out.targets[0] = 1000;
        let bytes = g.to_snapshot_bytes().unwrap();
        let err = KnowledgeGraph::from_snapshot_bytes(&bytes, Path::new("i.gps")).unwrap_err();
        assert!(matches!(err, SnapshotError::Invalid { .. }), "{err}");
    }
}
