//! EGSM's source for a bundle: a tarball made at bundle time from a git directory (a clone, bare or
//! not, holding the pinned commit: `git archive`) or a plain source tree (`tar`, its commit
//! unchecked), with the licence beside it. EGSM is MIT-licensed, so the bundle may carry it; nothing
//! of it is ever committed to this repository.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};

/// github.com/RapidsAtHKUST/EGSM, the commit the build script was written against (its only one
/// with code, 2023-07-20).
pub const REPO: &str = "RapidsAtHKUST/EGSM";
pub const COMMIT: &str = "de854d589eef9744b01f395f95c03480f791e322";

/// Files a source tree must have to be taken for EGSM's.
const MARKERS: [&str; 3] = ["LICENSE", "CMakeLists.txt", "main.cpp"];

/// Writes `EGSM.tar.gz` (one top directory), `LICENSE` and `SOURCE.txt` (where it came from) into
/// `dir`; returns the origin line.
pub fn pack(from: &Path, dir: &Path) -> Result<String> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let tarball = dir.join("EGSM.tar.gz");
    let origin = match git_dir(from) {
        Some(git) => {
            archive(&git, &tarball)?;
            let licence = git_output(&git, &["show", &format!("{COMMIT}:LICENSE")])?;
            fs::write(dir.join("LICENSE"), licence)?;
            format!("{} at {COMMIT} (github.com/{REPO})", from.display())
        }
        None => {
            for m in MARKERS {
                ensure!(
                    from.join(m).is_file(),
                    "{}: not an EGSM source tree nor a git directory (no {m})",
                    from.display()
                );
            }
            tar_tree(from, &tarball)?;
            fs::copy(from.join("LICENSE"), dir.join("LICENSE"))
                .with_context(|| format!("cannot copy {}/LICENSE", from.display()))?;
            format!(
                "{} (a plain source tree: its commit is not checked; the script was written for {COMMIT})",
                from.display()
            )
        }
    };
    fs::write(dir.join("SOURCE.txt"), format!("{origin}\n"))?;
    Ok(origin)
}

/// The git directory of a checkout, or the directory itself when it is a bare repository (as the
/// `git clone --bare` and mirror layouts are).
fn git_dir(p: &Path) -> Option<PathBuf> {
    let dotgit = p.join(".git");
    if dotgit.exists() {
        return Some(dotgit);
    }
    (p.join("HEAD").is_file() && p.join("objects").is_dir()).then(|| p.to_path_buf())
}

fn archive(git: &Path, tarball: &Path) -> Result<()> {
    let has = git_output(git, &["cat-file", "-t", COMMIT]);
    if !matches!(has, Ok(t) if String::from_utf8_lossy(&t).trim() == "commit") {
        bail!(
            "{} lacks EGSM's commit {COMMIT} (clone github.com/{REPO} again)",
            git.display()
        );
    }
    let out = tarball.to_string_lossy().into_owned();
    git_output(
        git,
        &[
            "archive",
            "--format=tar.gz",
            "--prefix=EGSM/",
            "-o",
            &out,
            COMMIT,
        ],
    )
    .map(drop)
}

fn git_output(git: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(git)
        .args(args)
        .output()
        .context("cannot run git")?;
    ensure!(
        out.status.success(),
        "git {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(out.stdout)
}

/// A plain tree as `EGSM/...`, without any `.git` or earlier build.
fn tar_tree(from: &Path, tarball: &Path) -> Result<()> {
    let status = Command::new("tar")
        .arg("-czf")
        .arg(tarball)
        .args([
            "--exclude=.git",
            "--exclude=./build",
            "--transform=s,^\\.,EGSM,",
            "-C",
        ])
        .arg(from)
        .arg(".")
        .status()
        .context("cannot run tar")?;
    ensure!(status.success(), "tar of {} failed", from.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in tree: the marker files with text of our own (not EGSM's).
    fn tree(dir: &Path) {
        for (f, text) in [
            ("LICENSE", "test licence\n"),
            ("CMakeLists.txt", "# stand-in\n"),
            ("main.cpp", "// stand-in\n"),
        ] {
            fs::write(dir.join(f), text).unwrap();
        }
        fs::create_dir_all(dir.join("build")).unwrap();
        fs::write(dir.join("build/EGSM"), "old build").unwrap();
    }

    fn listing(tarball: &Path) -> String {
        let out = Command::new("tar")
            .arg("-tzf")
            .arg(tarball)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[test]
    fn a_plain_tree_is_packed_under_one_directory_with_its_licence() {
        let (src, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        tree(src.path());
        let origin = pack(src.path(), dir.path()).unwrap();
        assert!(origin.contains("its commit is not checked"), "{origin}");
        let files = listing(&dir.path().join("EGSM.tar.gz"));
        assert!(files.lines().any(|l| l == "EGSM/main.cpp"), "{files}");
        assert!(!files.contains("build/EGSM"), "{files}");
        let licence = fs::read_to_string(dir.path().join("LICENSE")).unwrap();
        assert_eq!(licence, "test licence\n");
        assert!(fs::read_to_string(dir.path().join("SOURCE.txt"))
            .unwrap()
            .starts_with(&src.path().display().to_string()));
    }

    #[test]
    fn other_directories_are_refused_with_the_reason() {
        let (src, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let err = format!("{:#}", pack(src.path(), dir.path()).unwrap_err());
        assert!(err.contains("not an EGSM source tree nor a git directory (no LICENSE)"));
        // A repository without the pinned commit.
        let git = src.path().join("repo.git");
        let ok = Command::new("git")
            .args(["init", "-q", "--bare"])
            .arg(&git)
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            let err = format!("{:#}", pack(&git, dir.path()).unwrap_err());
            assert!(
                err.contains(&format!("lacks EGSM's commit {COMMIT}")),
                "{err}"
            );
        }
    }
}
