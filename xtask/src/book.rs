//! `cargo xtask book`: builds the documentation book (`docs/`, mdBook) and checks its links; with
//! `--commands`, runs the shell commands of the book and the README; with `--figures`, redraws the
//! figures the book draws from committed measurements.
//!
//! Links: every relative link of `README.md` and of the book's chapters must name a file that
//! exists, and its `#anchor` a heading there (the ids mdBook gave the built HTML, or GitHub's slugs
//! for a markdown file outside the book). A chapter may not link out of `docs/src`: mdBook rewrites
//! `.md` links to `.html`, so such a link breaks in the built book (name the path in code instead).
//!
//! Commands: each ```` ```sh ```` block is run, command by command, from a scratch directory that
//! mirrors the repository root (a symlink per top-level entry, so relative paths resolve as from
//! the root and what the commands write stays out of the tree), with the debug `gpsense` first on
//! `PATH`. A block right after a `<!-- skip: REASON -->` line is not run, and its reason printed.
//! The convention is described for contributors in `docs/src/contributing.md`.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Component, Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;

/// The mdBook release CI installs (`cargo install mdbook --locked --version ...`).
pub const MDBOOK_VERSION: &str = "0.4.52";

#[derive(Args)]
pub struct BookArgs {
    /// Run the README's and the book's shell commands (```sh blocks not marked skip) against the
    /// debug `gpsense`, instead of building the book.
    #[arg(long, conflicts_with = "figures")]
    commands: bool,
    /// Only the commands of files whose path holds this text (with --commands).
    #[arg(long, value_name = "TEXT", requires = "commands")]
    only: Option<String>,
    /// Seconds one command may run before it counts as failed (with --commands).
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=3600))]
    timeout: u64,
    /// Redraw docs/src/images/h100-queries.{svg,png} from benches/gpu/h100-2026-11-23.
    #[arg(long)]
    figures: bool,
}

pub fn run(root: &Path, args: &BookArgs) -> Result<()> {
    if args.figures {
        return figures::draw(root);
    }
    if args.commands {
        let timeout = Duration::from_secs(args.timeout);
        return commands::run(root, args.only.as_deref(), timeout);
    }
    build(root)?;
    let problems = check_links(root)?;
    if !problems.is_empty() {
        bail!(
            "{} broken link(s):\n  {}",
            problems.len(),
            problems.join("\n  ")
        );
    }
    println!("book built in docs/book; every relative link and anchor resolves");
    Ok(())
}

fn build(root: &Path) -> Result<()> {
    let mdbook = std::env::var_os("MDBOOK").unwrap_or_else(|| "mdbook".into());
    let status = Command::new(&mdbook)
        .arg("build")
        .arg(root.join("docs"))
        .status()
        .with_context(|| {
            format!(
                "running {}: install it with `cargo install mdbook --locked --version {MDBOOK_VERSION}` \
                 (or set MDBOOK to its path)",
                Path::new(&mdbook).display()
            )
        })?;
    if !status.success() {
        bail!("mdbook build docs failed ({status})");
    }
    Ok(())
}

/// The markdown files whose links are checked: the README, then the book's chapters.
fn markdown_files(root: &Path) -> Result<Vec<PathBuf>> {
    let mut files = vec![root.join("README.md")];
    let src = root.join("docs/src");
    let mut chapters: Vec<PathBuf> = fs::read_dir(&src)
        .with_context(|| format!("reading {}", src.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    files.extend(chapters);
    Ok(files)
}

fn check_links(root: &Path) -> Result<Vec<String>> {
    let src = root.join("docs/src");
    let built = root.join("docs/book");
    let mut ids: HashMap<PathBuf, BTreeSet<String>> = HashMap::new();
    let mut problems = Vec::new();
    for file in markdown_files(root)? {
        let text = fs::read_to_string(&file).with_context(|| format!("{}", file.display()))?;
        let shown = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        let in_book = file.starts_with(&src);
        for (line, target) in links(&text) {
            if is_external(&target) {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dir = file.parent().unwrap_or(root);
            let resolved = if path.is_empty() {
                file.clone()
            } else {
                normalise(&dir.join(path))
            };
            let at = format!("{shown}:{line}: {target}");
            if !resolved.exists() {
                problems.push(format!("{at}: no such file"));
                continue;
            }
            if in_book && !resolved.starts_with(&src) {
                problems.push(format!(
                    "{at}: leaves docs/src (mdBook would rewrite it; name the path in code instead)"
                ));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            let known = ids
                .entry(resolved.clone())
                .or_insert_with(|| anchors_of(&resolved, &src, &built).unwrap_or_default());
            if !known.contains(anchor) {
                problems.push(format!("{at}: no heading with the id \"{anchor}\""));
            }
        }
    }
    problems.extend(check_built(&built)?);
    Ok(problems)
}

/// Every relative `href` and `src` of the built pages (what mdBook made of the chapters' links)
/// names a file of the built book, and its anchor an id there.
fn check_built(built: &Path) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let mut pages: Vec<PathBuf> = fs::read_dir(built)
        .with_context(|| format!("reading {}", built.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "html"))
        .collect();
    pages.sort();
    for page in pages {
        let html = fs::read_to_string(&page)?;
        let name = page.file_name().unwrap_or_default().to_string_lossy();
        for attr in [" href=\"", " src=\""] {
            for target in html.split(attr).skip(1).filter_map(|r| r.split('"').next()) {
                if is_external(target) || target.starts_with("javascript:") {
                    continue;
                }
                let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
                let file = if path.is_empty() {
                    page.clone()
                } else {
                    normalise(&built.join(path))
                };
                if !file.exists() {
                    problems.push(format!("docs/book/{name}: {target}: no such file"));
                } else if !anchor.is_empty()
                    && file.extension().is_some_and(|e| e == "html")
                    && !html_ids(&fs::read_to_string(&file)?).contains(anchor)
                {
                    problems.push(format!("docs/book/{name}: {target}: no such id"));
                }
            }
        }
    }
    Ok(problems)
}

fn is_external(target: &str) -> bool {
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|s| target.starts_with(s))
}

/// `a/./b/../c` as `a/c`, without touching the file system (targets may be symlinks).
fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// The ids a link may name in `file`: for a chapter, those of its built HTML page; for another
/// markdown file, GitHub's slugs of its headings.
fn anchors_of(file: &Path, src: &Path, built: &Path) -> Result<BTreeSet<String>> {
    if let Ok(rel) = file.strip_prefix(src) {
        let html = built.join(rel).with_extension("html");
        let page = fs::read_to_string(&html).with_context(|| format!("{}", html.display()))?;
        return Ok(html_ids(&page));
    }
    let text = fs::read_to_string(file)?;
    Ok(headings(&text).iter().map(|h| slug(h)).collect())
}

fn html_ids(page: &str) -> BTreeSet<String> {
    page.split(" id=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect()
}

/// The text of each `#` heading outside code blocks.
fn headings(text: &str) -> Vec<String> {
    prose_lines(text)
        .filter_map(|(_, l)| {
            let t = l.trim_start_matches('#');
            (t.len() < l.len() && t.starts_with(' ')).then(|| t.trim().to_owned())
        })
        .collect()
}

/// GitHub's (and mdBook's) id of a heading: lower case, inline code marks and punctuation other
/// than `-` and `_` dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Lines outside fenced code blocks, numbered from 1.
fn prose_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut fenced = false;
    text.lines().enumerate().filter_map(move |(i, l)| {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            return None;
        }
        (!fenced).then_some((i + 1, l))
    })
}

/// Every `](target)` and `src="target"` outside code, with its line.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in without_code_spans(text) {
        for part in line.split("](").skip(1) {
            if let Some(end) = part.find([')', ' ']) {
                out.push((n, part[..end].to_owned()));
            }
        }
        for part in line.split("src=\"").skip(1) {
            if let Some(end) = part.find('"') {
                out.push((n, part[..end].to_owned()));
            }
        }
    }
    out
}

/// The prose lines with inline code blanked out; a code span may run over lines of its
/// paragraph, never past a blank line.
fn without_code_spans(text: &str) -> Vec<(usize, String)> {
    let mut in_code = false;
    prose_lines(text)
        .map(|(n, line)| {
            if line.trim().is_empty() {
                in_code = false;
            }
            let kept = line
                .chars()
                .map(|c| {
                    if c == '`' {
                        in_code = !in_code;
                        ' '
                    } else if in_code {
                        ' '
                    } else {
                        c
                    }
                })
                .collect();
            (n, kept)
        })
        .collect()
}

mod commands {
    //! Extracting and running the book's shell commands.

    use super::*;

    /// One command to run, where it was written, and the variable assignments before it in its
    /// block (they are run in front of it).
    #[derive(Debug, PartialEq)]
    pub struct Cmd {
        pub line: usize,
        pub text: String,
        pub prelude: Vec<String>,
        pub background: bool,
    }

    #[derive(Debug, PartialEq)]
    pub struct Block {
        pub line: usize,
        pub skip: Option<String>,
        pub commands: Vec<Cmd>,
    }

    /// The ```` ```sh ```` blocks of a markdown text.
    pub fn blocks(text: &str) -> Vec<Block> {
        let lines: Vec<&str> = text.lines().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            let fence = lines[i].trim();
            if !fence.starts_with("```") {
                i += 1;
                continue;
            }
            let lang = fence.trim_start_matches('`').trim();
            let start = i;
            let mut end = i + 1;
            while end < lines.len() && !lines[end].trim().starts_with("```") {
                end += 1;
            }
            if lang == "sh" {
                let skip = lines[..start]
                    .iter()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .and_then(|l| skip_reason(l));
                let body = &lines[(start + 1).min(end)..end];
                out.push(Block {
                    line: start + 1,
                    skip,
                    commands: split(body, start + 2),
                });
            }
            i = end + 1;
        }
        out
    }

    fn skip_reason(line: &str) -> Option<String> {
        let inner = line
            .trim()
            .strip_prefix("<!--")?
            .strip_suffix("-->")?
            .trim();
        Some(inner.strip_prefix("skip:")?.trim().to_owned())
    }

    /// Splits a block into commands: a newline ends one unless it is escaped by `\` or inside
    /// quotes; `#` outside quotes starts a comment; a line `NAME=value` is kept as a prelude for
    /// the commands after it.
    pub fn split(body: &[&str], first_line: usize) -> Vec<Cmd> {
        let mut out = Vec::new();
        let mut prelude = Vec::new();
        let mut cur = String::new();
        let mut cur_line = first_line;
        let (mut single, mut double) = (false, false);
        for (k, line) in body.iter().enumerate() {
            if cur.trim().is_empty() {
                cur_line = first_line + k;
            }
            let mut chars = line.chars().peekable();
            let mut prev = ' ';
            let mut continued = false;
            while let Some(c) = chars.next() {
                match c {
                    '\'' if !double => single = !single,
                    '"' if !single => double = !double,
                    '\\' if !single => {
                        if let Some(n) = chars.next() {
                            cur.push(c);
                            cur.push(n);
                            prev = n;
                            continue;
                        }
                        continued = true;
                        break;
                    }
                    '#' if !single && !double && prev.is_whitespace() => break,
                    _ => {}
                }
                cur.push(c);
                prev = c;
            }
            if single || double {
                cur.push('\n');
                continue;
            }
            if continued {
                cur.push(' ');
                continue;
            }
            let text = std::mem::take(&mut cur).trim().to_owned();
            if text.is_empty() {
                continue;
            }
            if is_assignment(&text) {
                prelude.push(text);
                continue;
            }
            let background = text.ends_with('&') && !text.ends_with("&&");
            let text = text.trim_end_matches('&').trim().to_owned();
            out.push(Cmd {
                line: cur_line,
                text,
                prelude: prelude.clone(),
                background,
            });
        }
        out
    }

    fn is_assignment(text: &str) -> bool {
        let Some((name, _)) = text.split_once('=') else {
            return false;
        };
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    }

    /// What the book writes for the installed binary, run as the debug one.
    pub fn as_run(text: &str) -> String {
        text.replace("cargo run --release --", "gpsense")
            .replace("target/release/gpsense", "gpsense")
    }

    /// README.md, then the chapters in the order of SUMMARY.md.
    fn sources(root: &Path) -> Result<Vec<PathBuf>> {
        let summary = fs::read_to_string(root.join("docs/src/SUMMARY.md"))?;
        let mut files = vec![root.join("README.md")];
        for (_, target) in links(&summary) {
            files.push(root.join("docs/src").join(target));
        }
        Ok(files)
    }

    pub fn run(root: &Path, only: Option<&str>, timeout: Duration) -> Result<()> {
        let gpsense = debug_binary(root)?;
        let scratch = root.join("target/book-commands");
        let _ = fs::remove_dir_all(&scratch);
        let bin = scratch.join(".bin");
        fs::create_dir_all(&bin)?;
        std::os::unix::fs::symlink(&gpsense, bin.join("gpsense"))?;
        for entry in fs::read_dir(root)? {
            let entry = entry?;
            let name = entry.file_name();
            if name != ".git" {
                std::os::unix::fs::symlink(entry.path(), scratch.join(&name))?;
            }
        }
        let path = std::env::join_paths(std::iter::once(bin.clone()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))?;
        let env = Env {
            dir: scratch.clone(),
            path,
            timeout,
        };
        let mut failures = Vec::new();
        let (mut ran, mut skipped) = (0, 0);
        for file in sources(root)? {
            let shown = file
                .strip_prefix(root)
                .unwrap_or(&file)
                .display()
                .to_string();
            if only.is_some_and(|o| !shown.contains(o)) {
                continue;
            }
            let text = fs::read_to_string(&file).with_context(|| shown.clone())?;
            for block in blocks(&text) {
                if let Some(why) = &block.skip {
                    if why.is_empty() {
                        failures.push(format!(
                            "{shown}:{}: a skipped block must say why (<!-- skip: REASON -->)",
                            block.line
                        ));
                    }
                    println!("skip {shown}:{}: {why}", block.line);
                    skipped += block.commands.len();
                    continue;
                }
                ran += block.commands.len();
                failures.extend(run_block(&env, &shown, &block));
            }
        }
        failures.extend(not_ignored(root, &scratch)?);
        println!(
            "{ran} commands run, {} failed, {skipped} skipped (their blocks say why)",
            failures.len()
        );
        if !failures.is_empty() {
            bail!("{}", failures.join("\n\n"));
        }
        Ok(())
    }

    /// What the commands wrote (the scratch directory's own entries) must be what git ignores
    /// when a reader runs them in the repository root.
    fn not_ignored(root: &Path, scratch: &Path) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(scratch)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type()?.is_symlink() || name == ".bin" || name == ".stderr" {
                continue;
            }
            // A directory is named with its slash, as git would see it in the root.
            let path = if entry.file_type()?.is_dir() {
                format!("{name}/")
            } else {
                name.clone()
            };
            let ignored = Command::new("git")
                .args(["check-ignore", "-q", "--no-index", &path])
                .current_dir(root)
                .status()?;
            if !ignored.success() {
                out.push(format!(
                    "the commands write {name}, which .gitignore does not cover"
                ));
            }
        }
        Ok(out)
    }

    pub struct Env {
        pub dir: PathBuf,
        pub path: std::ffi::OsString,
        pub timeout: Duration,
    }

    impl Env {
        fn command(&self, cmd: &Cmd) -> Command {
            let mut script = String::new();
            for p in &cmd.prelude {
                let _ = writeln!(script, "{}", as_run(p));
            }
            script.push_str(&as_run(&cmd.text));
            let mut c = Command::new("bash");
            c.arg("-c")
                .arg(script)
                .current_dir(&self.dir)
                .env("PATH", &self.path)
                .stdin(Stdio::null());
            c
        }
    }

    /// Runs a block's commands in turn; background ones (`... &`) until the block ends. Returns
    /// a message per failure.
    pub fn run_block(env: &Env, file: &str, block: &Block) -> Vec<String> {
        let mut background: Vec<Child> = Vec::new();
        let mut failures = Vec::new();
        for cmd in &block.commands {
            let at = format!("{file}:{}", cmd.line);
            let started = Instant::now();
            let result = if cmd.background {
                start_background(env, cmd).map(|child| background.push(child))
            } else {
                run_one(env, cmd)
            };
            match result {
                Ok(()) => println!(
                    "ok   {at} ({:.1} s): {}",
                    started.elapsed().as_secs_f64(),
                    first_line(&cmd.text)
                ),
                Err(e) => {
                    println!("FAIL {at}: {}", first_line(&cmd.text));
                    failures.push(format!("{at}: `{}` failed: {e:#}", cmd.text));
                }
            }
        }
        for mut child in background {
            let _ = child.kill();
            let _ = child.wait();
        }
        failures
    }

    fn first_line(text: &str) -> &str {
        text.lines().next().unwrap_or("")
    }

    fn run_one(env: &Env, cmd: &Cmd) -> Result<()> {
        let err_path = env.dir.join(".stderr");
        let mut child = env
            .command(cmd)
            .stdout(Stdio::null())
            .stderr(fs::File::create(&err_path)?)
            .spawn()?;
        let started = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait()? {
                break s;
            }
            if started.elapsed() > env.timeout {
                let _ = child.kill();
                let _ = child.wait();
                bail!(
                    "still running after {} s{}",
                    env.timeout.as_secs(),
                    stderr_tail(&err_path)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if !status.success() {
            bail!("{status}{}", stderr_tail(&err_path));
        }
        Ok(())
    }

    fn stderr_tail(path: &Path) -> String {
        let text = fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = &lines[lines.len().saturating_sub(20)..];
        if tail.is_empty() {
            String::new()
        } else {
            format!("; stderr:\n    {}", tail.join("\n    "))
        }
    }

    /// Starts a server and waits for its first line on stdout (`listening on ...`).
    fn start_background(env: &Env, cmd: &Cmd) -> Result<Child> {
        // `exec`: the child is the server itself, so killing it stops the server.
        let script = format!("exec {}", as_run(&cmd.text));
        let mut c = Command::new("bash");
        c.arg("-c")
            .arg(script)
            .current_dir(&env.dir)
            .env("PATH", &env.path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn()?;
        let stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut first = String::new();
            let mut reader = BufReader::new(stdout);
            let _ = tx.send(reader.read_line(&mut first).map(|_| first));
            // Keep reading so that the server never blocks on a full pipe.
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
        });
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(Ok(line)) if !line.is_empty() => Ok(child),
            _ => {
                let _ = child.kill();
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                let _ = child.wait();
                bail!("printed no first line within 60 s; stderr: {}", err.trim())
            }
        }
    }

    /// Builds the debug `gpsense` and returns its path. The workspace's tests select the same
    /// crates and features as `cargo test --workspace`, so after the tests nothing is rebuilt;
    /// `-p gpsense-cli` alone resolves other features and rebuilt most of the tree (2 min in CI).
    fn debug_binary(root: &Path) -> Result<PathBuf> {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "--workspace", "--tests"])
            .current_dir(root)
            .status()?;
        if !status.success() {
            bail!("cargo build --workspace --tests failed");
        }
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target"));
        let target = if target.is_absolute() {
            target
        } else {
            root.join(target)
        };
        Ok(target.join("debug/gpsense"))
    }
}

mod figures {
    //! The book's figures drawn from committed measurements, by the bench's plotting code.

    use super::*;
    use crate::bench::plot::{figure, Series};

    const RUN: &str = "benches/gpu/h100-2026-11-23";

    /// The H100 run's per-query medians of the gpu, dfs and kernels engines (WordNet's counted
    /// queries, then ConceptNet-100K's written rows), as docs/src/images/h100-queries.{svg,png}.
    pub fn draw(root: &Path) -> Result<()> {
        let mut series = Vec::new();
        for (engine, label) in [
            ("gpu", "gpu (H100)"),
            ("dfs", "dfs (16 CPU threads)"),
            ("kernels", "kernels (16 CPU threads)"),
        ] {
            let mut medians = Vec::new();
            for set in ["wn", "cs"] {
                let path = root.join(RUN).join(format!("{set}_{engine}.txt"));
                let text =
                    fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
                medians.extend(
                    medians_of_three(&text).with_context(|| format!("{}", path.display()))?,
                );
            }
            let points = medians
                .iter()
                .enumerate()
                .map(|(i, &ms)| ((i + 1) as f64, ms))
                .collect();
            series.push(Series {
                label: label.to_owned(),
                points,
            });
        }
        let stem = root.join("docs/src/images/h100-queries");
        figure(
            &stem,
            "NVIDIA H100, 2026-11-23: per-query time by engine",
            "query (1-8: benches/gpu/wordnet.rq, counted; 9-12: conceptnet.rq, rows written)",
            &series,
        )?;
        println!("wrote {0}.svg and {0}.png", stem.display());
        Ok(())
    }

    /// `N matches in X ms [...]` lines, each query three times in a row: the median of each three.
    pub fn medians_of_three(text: &str) -> Result<Vec<f64>> {
        let times = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let ms = l
                    .split(" in ")
                    .nth(1)
                    .and_then(|r| r.split(" ms").next())
                    .ok_or_else(|| anyhow!("no time in {l:?}"))?;
                ms.parse::<f64>()
                    .map_err(|e| anyhow!("bad time in {l:?}: {e}"))
            })
            .collect::<Result<Vec<f64>>>()?;
        if times.len() % 3 != 0 {
            bail!("{} timings, not three per query", times.len());
        }
        Ok(times
            .chunks(3)
            .map(|c| {
                let mut c = c.to_vec();
                c.sort_by(f64::total_cmp);
                c[1]
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::commands::{blocks, split, Cmd};
    use super::*;

    #[test]
    fn commands_join_quotes_and_continuations_and_drop_comments() {
        let body = [
            "P='PREFIX c: <x>'",
            "gpsense query \"$P SELECT ?x",
            "  WHERE { ?x a c:y }\"   # two lines in quotes",
            "gpsense match --data a \\",
            "    --query b",
            "",
            "# a comment line",
            "gpsense serve --bind 127.0.0.1:0 &",
            "gpsense query 'SELECT * WHERE { cat IsA pet }' && echo yes  # exit 1 when no",
        ];
        let cmds = split(&body, 10);
        let texts: Vec<&str> = cmds.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "gpsense query \"$P SELECT ?x\n  WHERE { ?x a c:y }\"",
                "gpsense match --data a      --query b",
                "gpsense serve --bind 127.0.0.1:0",
                "gpsense query 'SELECT * WHERE { cat IsA pet }' && echo yes",
            ]
        );
        assert_eq!(cmds[0].prelude, ["P='PREFIX c: <x>'"]);
        assert_eq!(cmds[0].line, 11);
        assert_eq!(cmds[1].line, 13);
        assert!(cmds[2].background && !cmds[3].background);
    }

    #[test]
    fn a_hash_inside_a_word_or_quotes_is_no_comment() {
        let cmds = split(&["echo 'a # b' x#y \"#z\""], 1);
        assert_eq!(cmds[0].text, "echo 'a # b' x#y \"#z\"");
    }

    #[test]
    fn only_sh_blocks_run_and_a_skip_marker_names_its_reason() {
        let md = "text\n\n```sh\necho one\n```\n\n<!-- skip: needs a GPU -->\n```sh\necho two\n```\n\n```text\necho three\n```\n```python\nprint(1)\n```\n";
        let b = blocks(md);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].skip, None);
        assert_eq!(
            b[0].commands,
            [Cmd {
                line: 4,
                text: "echo one".into(),
                prelude: vec![],
                background: false
            }]
        );
        assert_eq!(b[1].skip.as_deref(), Some("needs a GPU"));
    }

    #[test]
    fn the_installed_binary_is_run_as_the_debug_one() {
        assert_eq!(
            commands::as_run("cargo run --release -- info && target/release/gpsense info"),
            "gpsense info && gpsense info"
        );
    }

    #[test]
    fn links_outside_code_with_their_lines() {
        let md =
            "see [a](a.md#x) and `[b](b.md)`\n```\n[c](c.md)\n```\n<img src=\"images/q.svg\">\n\
                  `a code span\nover [d](d.md) lines` then [e](e.md)\n";
        assert_eq!(
            links(md),
            [
                (1, "a.md#x".to_owned()),
                (5, "images/q.svg".to_owned()),
                (7, "e.md".to_owned())
            ]
        );
    }

    #[test]
    fn slugs_as_github_and_mdbook_make_them() {
        assert_eq!(slug("Measured on an H100"), "measured-on-an-h100");
        assert_eq!(
            slug("Checking a GPU: `cargo xtask gpu-check`"),
            "checking-a-gpu-cargo-xtask-gpu-check"
        );
        assert_eq!(
            headings("# A\n```\n# not\n```\n## B c\n#hashtag\n"),
            ["A", "B c"]
        );
    }

    #[test]
    fn broken_links_and_anchors_are_reported_with_their_place() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        fs::create_dir_all(r.join("docs/src")).unwrap();
        fs::create_dir_all(r.join("docs/book")).unwrap();
        fs::write(
            r.join("README.md"),
            "# Top\n[ok](docs/src/a.md#here) [bad](docs/src/a.md#gone) [self](#top) [none](x.md)\n",
        )
        .unwrap();
        fs::write(r.join("docs/src/a.md"), "# Here\n[out](../../README.md)\n").unwrap();
        fs::write(r.join("docs/book/a.html"), "<h1 id=\"here\">Here</h1>").unwrap();
        let problems = check_links(r).unwrap();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].starts_with("README.md:2: docs/src/a.md#gone: no heading"));
        assert!(problems[1].starts_with("README.md:2: x.md: no such file"));
        assert!(problems[2].starts_with("docs/src/a.md:2: ../../README.md: leaves docs/src"));
    }

    /// A command that fails is named with its place, its status and its stderr; one past the
    /// time limit fails too; a server in the background is waited for, then stopped.
    #[test]
    fn failing_commands_are_named_with_their_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let env = commands::Env {
            dir: dir.path().to_owned(),
            path: std::env::var_os("PATH").unwrap_or_default(),
            timeout: Duration::from_secs(2),
        };
        let md = "```sh\nV=7\ntest \"$V\" = 7\necho listening on x; sleep 60 &\necho oops >&2; exit 3\nsleep 10\n```\n";
        let block = &blocks(md)[0];
        let started = Instant::now();
        let failures = commands::run_block(&env, "x.md", block);
        assert!(started.elapsed() < Duration::from_secs(8));
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(failures[0].starts_with("x.md:5: `echo oops >&2; exit 3` failed: exit status: 3"));
        assert!(failures[0].contains("oops"));
        assert!(failures[1].contains("still running after 2 s"));
    }

    #[test]
    fn medians_of_three_runs_per_query() {
        let text = "9 matches in 2.5 ms [iso]\n9 matches in 2.3 ms [iso]\n9 matches in 2.4 ms [iso]\n1,397,937 rows in 650.3 ms [x]\n1 rows in 1.0 ms\n1 rows in 900.0 ms\n";
        assert_eq!(figures::medians_of_three(text).unwrap(), [2.4, 650.3]);
        assert!(figures::medians_of_three("1 rows in 1 ms\n").is_err());
    }
}
