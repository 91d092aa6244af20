//! `cargo xtask fetch NAME` and `cargo xtask list`: datasets too large, or too encumbered, to ship
//! in the repository.
//!
//! Everything lands in `datasets/fetched/` (which git must ignore) unless `--dest` says otherwise.
//! A download goes to a hidden `.NAME.*.part` file in the destination directory and is renamed into
//! place only after its SHA-256 matches, so an interrupted or corrupt download never looks like a
//! fetched dataset, and a failed one leaves nothing behind.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Context, Result};
use flate2::{write::GzEncoder, Compression};
use sha2::{Digest, Sha256};
use tempfile::NamedTempFile;

use crate::senticnet;

/// A dataset `fetch` knows.
#[derive(Debug)]
pub struct Dataset {
    pub name: &'static str,
    pub summary: &'static str,
    /// File name under the destination directory.
    pub file: &'static str,
    /// Size of what is downloaded, for `list`.
    pub download: &'static str,
    pub licence: &'static str,
    source: Source,
}

#[derive(Debug)]
enum Source {
    /// A plain download with curl.
    Url {
        url: &'static str,
        /// The trusted SHA-256, when one is known.
        sha256: Option<&'static str>,
    },
    /// The SenticNet 6 wheel from PyPI, converted to triples (see [`senticnet`]).
    SenticNet,
}

/// The official ConceptNet 5.7 dump.
const CONCEPTNET_URL: &str =
    "https://s3.amazonaws.com/conceptnet/downloads/2019/edges/conceptnet-assertions-5.7.0.csv.gz";

/// Trusted SHA-256 of [`CONCEPTNET_URL`]: NOT KNOWN. ConceptNet publishes no checksum, no public
/// copy of one could be found, and s3.amazonaws.com was unreachable when this was written, so it
/// could not be computed either. Until someone pins it here (after checking a download against a
/// second, independent copy), `fetch conceptnet` prints the digest of what it downloaded and keeps
/// the file only when `--sha256 HEX` is given. Do not fill this in from a single download.
const CONCEPTNET_SHA256: Option<&str> = None;

const SENTICNET_PIP_SPEC: &str = "senticnet==1.6";
const SENTICNET_WHEEL: &str = "senticnet-1.6-py3-none-any.whl";
/// PyPI's published SHA-256 of the wheel (the `#sha256=` of https://pypi.org/simple/senticnet/); a
/// download made while writing this matched it. pip checks the index's digest too; this guards
/// against the release being replaced.
const SENTICNET_WHEEL_SHA256: &str =
    "aa0ce9970fc4a8ca1f9dc0f703ed8fb3e9e337705e80f7968a8e7fc96071ce1a";
const SENTICNET_MEMBER: &str = "senticnet/senticnet6.py";

pub const DATASETS: &[Dataset] = &[
    Dataset {
        name: "conceptnet",
        summary: "ConceptNet 5.7 assertions, all languages (34M edges), read by `gpsense ingest`",
        file: "conceptnet-assertions-5.7.0.csv.gz",
        // The size of the official file as published; it could not be measured from here.
        download: "about 475 MB (gzip)",
        licence: "CC BY-SA 4.0 (ConceptNet 5; credit the Commonsense Computing Initiative)",
        source: Source::Url {
            url: CONCEPTNET_URL,
            sha256: CONCEPTNET_SHA256,
        },
    },
    Dataset {
        name: "senticnet",
        summary: "SenticNet 6 (200,000 concepts) converted to relation/head/tail triples",
        file: "senticnet6.triples.tsv.gz",
        download: "52 MB wheel from PyPI; 8.3 MB once converted",
        licence: "no licence for the data (the PyPI wrapper code is MIT): local use only, \
                  never commit; cite SenticNet 6",
        source: Source::SenticNet,
    },
];

pub fn names() -> Vec<&'static str> {
    DATASETS.iter().map(|d| d.name).collect()
}

pub fn find(name: &str) -> Result<&'static Dataset> {
    DATASETS
        .iter()
        .find(|d| d.name == name)
        .ok_or_else(|| anyhow!("unknown dataset {name:?} (known: {})", names().join(", ")))
}

/// The workspace root: xtask lives one level below it.
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

pub fn default_dest() -> PathBuf {
    workspace_root().join("datasets").join("fetched")
}

#[derive(Clone, Debug, Default)]
pub struct Options {
    pub dest: PathBuf,
    pub force: bool,
    /// Expected SHA-256 of the download, overriding (or standing in for) the pinned one.
    pub sha256: Option<String>,
    /// Download from here instead of the official address (a mirror, a `file://` copy).
    pub url: Option<String>,
}

/// Fetches `dataset` into `opts.dest` and returns the path of the result.
pub fn fetch(dataset: &Dataset, opts: &Options) -> Result<PathBuf> {
    let target = opts.dest.join(dataset.file);
    if target.exists() && !opts.force {
        println!(
            "{} is already fetched: {} (--force fetches it again)",
            dataset.name,
            shown(&target)
        );
        return Ok(target);
    }
    fs::create_dir_all(&opts.dest)
        .with_context(|| format!("cannot create {}", opts.dest.display()))?;
    remove_stale_partials(&opts.dest, dataset.file);
    match dataset.source {
        Source::Url { url, sha256 } => fetch_url(dataset, url, sha256, opts, &target)?,
        Source::SenticNet => fetch_senticnet(opts, &target)?,
    }
    println!("{}: {}", dataset.name, shown(&target));
    Ok(target)
}

fn fetch_url(
    dataset: &Dataset,
    official: &str,
    pinned: Option<&str>,
    opts: &Options,
    target: &Path,
) -> Result<()> {
    let url = opts.url.as_deref().unwrap_or(official);
    let expected = expected_digest(pinned, opts.sha256.as_deref())?;
    if expected.is_none() {
        eprintln!(
            "note: no trusted SHA-256 is known for {}; it will be downloaded and its digest \
             printed, but not kept (pass --sha256 HEX to keep it)",
            dataset.name
        );
    }
    let part = partial(&opts.dest, dataset.file)?;
    eprintln!("downloading {url}");
    download("curl", url, part.path())?;
    verify_and_place(part, expected.as_deref(), target, dataset.name)
}

/// The digest to check against: `--sha256` if given (it must agree with a pinned one), else the
/// pinned one, else none.
fn expected_digest(pinned: Option<&str>, given: Option<&str>) -> Result<Option<String>> {
    let given = given.map(parse_sha256).transpose()?;
    match (pinned, given) {
        (Some(p), Some(g)) if p != g => {
            bail!("--sha256 {g} contradicts the digest pinned in xtask/src/fetch.rs ({p})")
        }
        (p, g) => Ok(g.or_else(|| p.map(str::to_owned))),
    }
}

/// A SHA-256 given on the command line, as 64 lowercase hex digits.
pub fn parse_sha256(text: &str) -> Result<String> {
    let hex = text.trim().to_ascii_lowercase();
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!("{text:?} is not a SHA-256 (64 hex digits)");
    }
    Ok(hex)
}

/// The SHA-256 of a file, in lowercase hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = reader
            .read(&mut buf)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// A hidden temporary file next to `file` in `dest`: the same directory, so the final rename is
/// atomic; deleted when dropped unless persisted.
fn partial(dest: &Path, file: &str) -> Result<NamedTempFile> {
    let prefix = format!(".{file}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".part");
    // Temporary files are private (0600); the fetched dataset should get the usual mode.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
    builder
        .tempfile_in(dest)
        .with_context(|| format!("cannot create a temporary file in {}", dest.display()))
}

/// Removes `.FILE.*.part` leftovers of a fetch that was killed (Ctrl-C skips the clean-up of the
/// temporary file, and a 475 MB leftover is worth noticing). Best effort: failures are ignored.
fn remove_stale_partials(dest: &Path, file: &str) {
    let prefix = format!(".{file}.");
    let Ok(entries) = fs::read_dir(dest) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(&prefix) && name.ends_with(".part") {
            eprintln!("removing a leftover partial download: {name}");
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Checks the SHA-256 of `part` and renames it to `target` when it matches `expected`. Otherwise
/// `part` is dropped, which deletes it: nothing is left behind.
fn verify_and_place(
    part: NamedTempFile,
    expected: Option<&str>,
    target: &Path,
    what: &str,
) -> Result<()> {
    let actual = sha256_file(part.path())?;
    match expected {
        Some(e) if e == actual => {
            part.as_file().sync_all()?;
            part.persist(target)
                .map_err(|e| e.error)
                .with_context(|| format!("cannot rename the download to {}", target.display()))?;
            Ok(())
        }
        Some(e) => bail!(
            "SHA-256 mismatch for {what}: expected {e}, got {actual}; the download is damaged or \
             the file changed upstream; nothing was kept"
        ),
        None => bail!(
            "SHA-256 of the {what} download: {actual}\n\
             No trusted digest for {what} is pinned in xtask/src/fetch.rs (none is published, and \
             none could be verified when it was written), so the file was not kept.\n\
             If you trust this download (compare the digest with an independent copy), run the \
             fetch again with `--sha256 {actual}`, and consider pinning it in xtask/src/fetch.rs."
        ),
    }
}

/// Downloads `url` to `out` with `program` (curl; a parameter so that a test can name a missing
/// one).
fn download(program: &str, url: &str, out: &Path) -> Result<()> {
    let mut cmd = Command::new(program);
    cmd.args(["-fL", "--retry", "3", "--connect-timeout", "30"]);
    if !io::stderr().is_terminal() {
        // No progress meter in logs, but still curl's own error line.
        cmd.arg("-sS");
    }
    cmd.arg("-o").arg(out).arg(url);
    let status = match cmd.status() {
        Ok(status) => status,
        Err(e) if e.kind() == io::ErrorKind::NotFound => bail!(
            "`{program}` not found: `cargo xtask fetch` downloads with curl; install it \
             (e.g. `apt-get install curl`) and try again"
        ),
        Err(e) => return Err(e).with_context(|| format!("cannot run `{program}`")),
    };
    if status.success() {
        return Ok(());
    }
    bail!(curl_failure(url, status.code()))
}

/// What a curl exit code means for the user (see EXIT CODES in `man curl`).
fn curl_failure(url: &str, code: Option<i32>) -> String {
    let unreachable = |why: &str, c: i32| {
        format!(
            "cannot reach {}: no network? (curl: {why}, exit code {c}); check the connection or \
             proxy, or fetch from a mirror with --url",
            url_host(url)
        )
    };
    match code {
        Some(c @ 5) => unreachable("could not resolve the proxy", c),
        Some(c @ 6) => unreachable("could not resolve the host", c),
        Some(c @ 7) => unreachable("failed to connect", c),
        Some(c @ 28) => unreachable("timed out", c),
        Some(c @ 35) => unreachable("TLS handshake failed", c),
        Some(c @ (52 | 55 | 56)) => unreachable("the connection broke", c),
        Some(22) => format!(
            "{url}: the server answered with an HTTP error (curl exit code 22); \
             the file may have moved"
        ),
        Some(37) => format!("cannot read {url}: no such file or not readable (curl exit code 37)"),
        Some(23) => "cannot write the download (disk full?) (curl exit code 23)".to_owned(),
        Some(c) => format!("curl failed on {url} with exit code {c} (see EXIT CODES in man curl)"),
        None => format!("curl was killed by a signal while downloading {url}"),
    }
}

/// The host of a URL, for messages (`https://user@host:443/p` -> `host`).
fn url_host(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(v6) = host_port.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6);
    }
    host_port.split(':').next().unwrap_or(host_port)
}

/// pip-downloads the SenticNet wheel, checks it, extracts `senticnet6.py` and converts it to
/// `target`. The wheel and the Python file stay in a temporary directory outside the repository:
/// SenticNet has no data licence, so not even a transient copy goes near the working tree.
fn fetch_senticnet(opts: &Options, target: &Path) -> Result<()> {
    if opts.url.is_some() {
        bail!(
            "--url only applies to datasets downloaded from a URL (conceptnet); \
             senticnet comes from PyPI"
        );
    }
    let expected = expected_digest(Some(SENTICNET_WHEEL_SHA256), opts.sha256.as_deref())?
        .unwrap_or_else(|| SENTICNET_WHEEL_SHA256.to_owned());
    let work = tempfile::Builder::new()
        .prefix("xtask-senticnet.")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let wheel = pip_download(work.path())?;
    let actual = sha256_file(&wheel)?;
    if actual != expected {
        bail!(
            "SHA-256 mismatch for {SENTICNET_WHEEL}: expected {expected}, got {actual}; \
             nothing was kept"
        );
    }
    let source = work.path().join("senticnet6.py");
    extract_member(&wheel, SENTICNET_MEMBER, &source)?;
    let bytes = fs::read(&source).with_context(|| format!("cannot read {}", source.display()))?;
    let parsed = senticnet::parse(&bytes).map_err(|e| anyhow!("{SENTICNET_MEMBER}: {e:#}"))?;
    let part = partial(&opts.dest, &file_name(target))?;
    let stats = write_triples_gz(&parsed, part.as_file())?;
    part.persist(target)
        .map_err(|e| e.error)
        .with_context(|| format!("cannot rename the output to {}", target.display()))?;
    print_summary(&parsed, &stats);
    Ok(())
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// Runs `python3 -m pip download` into `dir` and returns the wheel's path.
fn pip_download(dir: &Path) -> Result<PathBuf> {
    eprintln!("pip download {SENTICNET_PIP_SPEC}");
    let status = Command::new("python3")
        .args(["-m", "pip", "download", SENTICNET_PIP_SPEC, "--no-deps"])
        .args([
            "--only-binary",
            ":all:",
            "--disable-pip-version-check",
            "-d",
        ])
        .arg(dir)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => bail!(
            "`python3 -m pip download {SENTICNET_PIP_SPEC}` failed ({s}): cannot reach pypi.org \
             (no network?), or pip is missing (`python3 -m pip --version`)"
        ),
        Err(e) if e.kind() == io::ErrorKind::NotFound => bail!(
            "python3 not found: SenticNet comes from PyPI through pip; install python3 and pip"
        ),
        Err(e) => return Err(e).context("cannot run python3"),
    }
    let wheel = dir.join(SENTICNET_WHEEL);
    if !wheel.is_file() {
        bail!("pip did not leave {SENTICNET_WHEEL} in {}", dir.display());
    }
    Ok(wheel)
}

/// Copies one member of a zip (the wheel) to `out`. Python's zipfile reads just that member, where
/// `python3 -m zipfile -e` would unpack all 200 MB of the wheel, and a zip crate would be one more
/// dependency for a tool that needs Python for pip anyway.
fn extract_member(zip: &Path, member: &str, out: &Path) -> Result<()> {
    const SCRIPT: &str = "import sys, zipfile\n\
                          z = zipfile.ZipFile(sys.argv[1])\n\
                          open(sys.argv[3], 'wb').write(z.read(sys.argv[2]))\n";
    let status = Command::new("python3")
        .args(["-c", SCRIPT])
        .arg(zip)
        .arg(member)
        .arg(out)
        .status()
        .context("cannot run python3")?;
    if !status.success() {
        bail!("cannot extract {member} from {} ({status})", zip.display());
    }
    Ok(())
}

/// Writes the gzip'd triples TSV to `file` and flushes it to disk.
fn write_triples_gz(parsed: &senticnet::Parsed, file: &File) -> Result<senticnet::Stats> {
    let mut gz = GzEncoder::new(BufWriter::new(file), Compression::default());
    let stats = senticnet::write_triples(parsed, &mut gz).context("cannot write the triples")?;
    let buffered = gz.finish().context("cannot write the triples")?;
    let file = buffered
        .into_inner()
        .map_err(|e| e.into_error())
        .context("cannot write the triples")?;
    file.sync_all()?;
    Ok(stats)
}

fn print_summary(parsed: &senticnet::Parsed, stats: &senticnet::Stats) {
    let by_relation: Vec<String> = stats
        .triples_by_relation
        .iter()
        .map(|(r, n)| format!("{r} {n}"))
        .collect();
    println!(
        "senticnet: {} concepts -> {} triples over {} distinct names ({})",
        stats.concepts,
        stats.triples(),
        stats.nodes,
        by_relation.join(", ")
    );
    println!(
        "  {} keys merged into a concept of the same name; skipped: {} links of a concept to \
         itself, {} repeated triples, {} empty values, {} empty keys; {} keys assigned twice \
         (the last assignment wins)",
        stats.merged_keys,
        stats.self_links_skipped,
        stats.repeated_triples_skipped,
        stats.empty_values_skipped,
        stats.empty_keys_skipped,
        parsed.overridden
    );
    println!("  SenticNet has no data licence: this file must never be committed");
}

/// The known datasets, their sizes and licences, and whether each is in `dest`.
pub fn list(dest: &Path) -> String {
    let mut out = format!(
        "datasets for `cargo xtask fetch NAME` (into {}):\n",
        shown(dest)
    );
    for d in DATASETS {
        let target = dest.join(d.file);
        let status = match fs::metadata(&target) {
            Ok(m) => format!("fetched: {} ({})", shown(&target), human_size(m.len())),
            Err(_) => "not fetched".to_owned(),
        };
        out.push_str(&format!(
            "\n  {:<11}{}\n  {:<11}download: {}\n  {:<11}licence:  {}\n  {:<11}{}\n",
            d.name, d.summary, "", d.download, "", d.licence, "", status
        ));
    }
    out
}

/// `path` relative to the workspace root when it is inside it (shorter messages).
fn shown(path: &Path) -> String {
    let root = workspace_root();
    path.strip_prefix(&root)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "kB", "MB", "GB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// SHA-256 of "hello\n".
    const HELLO_SHA256: &str = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn part_with(dir: &Path, content: &[u8]) -> NamedTempFile {
        let mut part = partial(dir, "data.gz").expect("partial");
        part.write_all(content).expect("write");
        part
    }

    #[test]
    fn hashes_a_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("hello");
        fs::write(&path, b"hello\n").expect("write");
        assert_eq!(sha256_file(&path).expect("hash"), HELLO_SHA256);
        assert!(sha256_file(&dir.path().join("missing")).is_err());
    }

    #[test]
    fn places_a_file_whose_digest_matches() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("data.gz");
        let part = part_with(dir.path(), b"hello\n");
        assert!(entries(dir.path())[0].ends_with(".part"));
        verify_and_place(part, Some(HELLO_SHA256), &target, "test").expect("digest matches");
        assert_eq!(entries(dir.path()), ["data.gz"]);
        assert_eq!(fs::read(&target).expect("read"), b"hello\n");
    }

    #[test]
    fn leaves_nothing_when_the_digest_is_wrong_or_unknown() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("data.gz");
        let wrong = "0".repeat(64);
        let e = verify_and_place(
            part_with(dir.path(), b"hello\n"),
            Some(&wrong),
            &target,
            "test",
        )
        .expect_err("wrong digest");
        assert!(e.to_string().contains("SHA-256 mismatch"), "{e}");
        assert!(e.to_string().contains(HELLO_SHA256), "{e}");
        assert!(entries(dir.path()).is_empty());

        let e = verify_and_place(part_with(dir.path(), b"hello\n"), None, &target, "test")
            .expect_err("no digest");
        assert!(
            e.to_string().contains(&format!("--sha256 {HELLO_SHA256}")),
            "{e}"
        );
        assert!(entries(dir.path()).is_empty());
    }

    #[test]
    fn a_wrong_digest_does_not_replace_an_existing_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("data.gz");
        fs::write(&target, b"old").expect("write");
        let wrong = "f".repeat(64);
        assert!(
            verify_and_place(part_with(dir.path(), b"new"), Some(&wrong), &target, "t").is_err()
        );
        assert_eq!(entries(dir.path()), ["data.gz"]);
        assert_eq!(fs::read(&target).expect("read"), b"old");
    }

    #[test]
    fn removes_stale_partials_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in [
            ".data.gz.abc.part",
            ".data.gz.x",
            "data.gz",
            ".other.gz.abc.part",
        ] {
            fs::write(dir.path().join(name), b"x").expect("write");
        }
        remove_stale_partials(dir.path(), "data.gz");
        assert_eq!(
            entries(dir.path()),
            [".data.gz.x", ".other.gz.abc.part", "data.gz"]
        );
    }

    #[test]
    fn checks_given_digests() {
        let upper = HELLO_SHA256.to_ascii_uppercase();
        assert_eq!(parse_sha256(&upper).expect("hex"), HELLO_SHA256);
        assert!(parse_sha256("abc").is_err());
        assert!(parse_sha256(&"g".repeat(64)).is_err());
        assert_eq!(expected_digest(None, None).expect("ok"), None);
        assert_eq!(
            expected_digest(Some(HELLO_SHA256), None)
                .expect("ok")
                .as_deref(),
            Some(HELLO_SHA256)
        );
        assert_eq!(
            expected_digest(None, Some(&upper)).expect("ok").as_deref(),
            Some(HELLO_SHA256)
        );
        let other = "1".repeat(64);
        assert!(expected_digest(Some(HELLO_SHA256), Some(&other)).is_err());
    }

    #[test]
    fn an_unreachable_url_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("x");
        let e = download("curl", "http://127.0.0.1:9/x", &out).expect_err("port 9 refuses");
        assert!(
            e.to_string()
                .contains("cannot reach 127.0.0.1: no network?"),
            "{e}"
        );
        let e = download("curl", "file:///nonexistent/xtask/x.gz", &out).expect_err("no file");
        assert!(
            e.to_string().contains("cannot read file:///nonexistent"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_curl_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let e = download(
            "xtask-no-such-curl",
            "http://127.0.0.1:9/x",
            &dir.path().join("x"),
        )
        .expect_err("missing program");
        assert!(e.to_string().contains("not found"), "{e}");
        assert!(e.to_string().contains("install it"), "{e}");
    }

    #[test]
    fn explains_curl_exit_codes() {
        let url = "https://s3.amazonaws.com/conceptnet/x.gz";
        assert!(
            curl_failure(url, Some(6)).starts_with("cannot reach s3.amazonaws.com: no network?")
        );
        assert!(curl_failure(url, Some(22)).contains("HTTP error"));
        assert!(curl_failure(url, Some(99)).contains("exit code 99"));
        assert!(curl_failure(url, None).contains("signal"));
        assert_eq!(
            url_host("https://u:p@host.example:8443/a?b"),
            "host.example"
        );
        assert_eq!(url_host("http://[::1]:9/x"), "::1");
        assert_eq!(url_host("file:///x"), "");
    }

    #[test]
    fn knows_its_datasets() {
        assert_eq!(names(), ["conceptnet", "senticnet"]);
        assert!(find("senticnet").is_ok());
        assert!(find("nope")
            .expect_err("unknown")
            .to_string()
            .contains("conceptnet, senticnet"));
        assert!(default_dest().ends_with("datasets/fetched"));
        let root_manifest = fs::read_to_string(workspace_root().join("Cargo.toml")).expect("root");
        assert!(root_manifest.contains("[workspace]"));
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(
            dir.path().join("senticnet6.triples.tsv.gz"),
            vec![0u8; 2500],
        )
        .expect("write");
        let text = list(dir.path());
        assert!(text.contains("CC BY-SA 4.0"), "{text}");
        assert!(text.contains("not fetched"), "{text}");
        assert!(
            text.contains("senticnet6.triples.tsv.gz (2.5 kB)"),
            "{text}"
        );
    }

    /// The converter's output is read by the real ingest as triples, relation first.
    #[test]
    fn converted_fixture_ingests() {
        use gpsense_graph::ingest::{ingest, Columns, Format, IngestOptions, NoProgress};
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/senticnet6_sample.py");
        let parsed = senticnet::parse(&fs::read(fixture).expect("fixture")).expect("parses");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("senticnet6.triples.tsv.gz");
        let stats =
            write_triples_gz(&parsed, &File::create(&path).expect("create")).expect("write");

        let (graph, report) =
            ingest(&[path], &IngestOptions::default(), &NoProgress).expect("ingest");
        let file = &report.files[0];
        assert_eq!(file.format, Format::Triples);
        assert_eq!(file.columns, Some(Columns::RelHeadTail));
        assert_eq!(file.edges, stats.triples());
        assert_eq!(report.skipped_total(), 0);
        assert_eq!(report.duplicates, 0);
        assert_eq!(graph.edge_count() as u64, stats.triples());
        assert_eq!(graph.node_count(), stats.nodes);
        assert_eq!(graph.relation_count(), 4);
        let ice = graph.node_id("ice cream").expect("ice cream");
        let dessert = graph.node_id("frozen dessert").expect("frozen dessert");
        let related = graph.relation_id("RelatedTo").expect("RelatedTo");
        assert!(graph.out().has_edge(ice, Some(related), dessert));
        assert!(graph.node_id("#joy").is_some());
        assert!(graph.node_id("ice_cream").is_none());
    }
}
