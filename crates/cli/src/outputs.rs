//! The files a command writes (`-o`), checked before any work: never one of the command's own
//! inputs, and a read-only file only with `--force`.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::{bail, Result};

/// Refuses to write `output` when it is one of `inputs` (the same file however it is named:
/// links followed, compared by device and inode), always; or when it exists and is read-only (no
/// write permission bit, or not writable by this user), unless `force`.
pub fn check(output: &Path, inputs: &[&Path], force: bool) -> Result<()> {
    // A missing output replaces nothing; anything but a file is the writer's to refuse.
    let Ok(meta) = std::fs::metadata(output) else {
        return Ok(());
    };
    if !meta.is_file() {
        return Ok(());
    }
    for input in inputs {
        let same =
            std::fs::metadata(input).is_ok_and(|m| (m.dev(), m.ino()) == (meta.dev(), meta.ino()));
        if same {
            bail!(
                "the output {} is the input {}: writing it would replace what is being read; \
                 write to another file",
                output.display(),
                input.display()
            );
        }
    }
    let writable = !meta.permissions().readonly()
        && std::fs::OpenOptions::new().write(true).open(output).is_ok();
    if !writable && !force {
        bail!(
            "{} is read-only: pass --force to replace it",
            output.display()
        );
    }
    Ok(())
}
