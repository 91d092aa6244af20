//! `cargo xtask ptx`: builds the kernels for `nvptx64-nvidia-cuda` into one linked PTX file per
//! architecture under `target/ptx/`, assembles each with `ptxas` (failing on any error), checks that
//! every kernel the host launches is an `.entry` taking its argument struct, and prints registers,
//! stack and shared memory per kernel so that regressions show.
//!
//! Toolchain: rustup's nightly with `rust-src` and `llvm-bitcode-linker` where present (`--rustup`);
//! otherwise, as on this project's offline machines and in CI, `../shared/tools/nvptx-toolchain.sh`,
//! which installs a working route from Debian's packages under `~/.cache/gpsense-nvptx` and prints
//! the environment (RUSTC, RUSTC_BOOTSTRAP, LD_LIBRARY_PATH, PTXAS).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};
use gpsense_kernels::abi::KERNELS;

/// Architectures built by default: A100 and H100.
pub const DEFAULT_ARCHS: &[&str] = &["sm_80", "sm_90"];

/// Resource limits on sm_90 that `cargo xtask ptx` enforces (the build fails above them): the hot
/// join kernel runs at full occupancy only with at most 64 registers per thread (a 256-thread
/// block then needs a quarter of an SM's 64K registers) and no local-memory stack.
pub const LIMITS: &[(&str, &str, Usage)] = &[(
    "sm_90",
    "extend_warp",
    Usage {
        registers: 64,
        stack: 0,
        shared: 0,
    },
)];

pub struct Options {
    pub archs: Vec<String>,
    /// Use rustup's nightly toolchain instead of the Debian route.
    pub rustup: bool,
}

/// Resource use of one kernel, from `ptxas -v`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub registers: u32,
    pub stack: u32,
    pub shared: u32,
}

pub fn run(root: &Path, opts: &Options) -> Result<()> {
    let env = if opts.rustup {
        rustup_env()?
    } else {
        debian_env(root)?
    };
    let ptxas = env
        .iter()
        .find(|(k, _)| k == "PTXAS")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| "ptxas".into());
    let out_dir = root.join("target/ptx");
    std::fs::create_dir_all(&out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    // One build per arch, at the same time: each is mostly one thread compiling `core`.
    let built: Vec<Result<PathBuf>> = std::thread::scope(|s| {
        let jobs: Vec<_> = (opts.archs.iter())
            .map(|arch| s.spawn(|| build(root, arch, &env, opts.rustup)))
            .collect();
        (jobs.into_iter())
            .map(|j| {
                j.join()
                    .unwrap_or_else(|_| bail!("a PTX build thread panicked"))
            })
            .collect()
    });
    for (arch, ptx) in opts.archs.iter().zip(built) {
        let ptx = ptx?;
        let dest = out_dir.join(format!("gpsense_kernels.{arch}.ptx"));
        copy_if_changed(&ptx, &dest)?;
        let text = std::fs::read_to_string(&dest)?;
        check_entries(&text).with_context(|| format!("{}", dest.display()))?;
        let usage = assemble(&ptxas, arch, &dest)?;
        print_usage(arch, &dest, &usage);
        check_limits(arch, &usage)?;
    }
    Ok(())
}

/// Writes only new content: a build with `embed-ptx` tracks the file's modification time, so
/// rewriting the same PTX would redo that build (a fat-LTO link) every time.
fn copy_if_changed(from: &Path, to: &Path) -> Result<()> {
    let new = std::fs::read(from).with_context(|| format!("cannot read {}", from.display()))?;
    if std::fs::read(to).is_ok_and(|old| old == new) {
        return Ok(());
    }
    std::fs::write(to, new).with_context(|| format!("cannot write {}", to.display()))
}

/// Runs the toolchain script (installing on first use) and returns the environment it prints.
fn debian_env(root: &Path) -> Result<Vec<(String, String)>> {
    let script = std::env::var_os("GPSENSE_NVPTX_SCRIPT")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/tools/nvptx-toolchain.sh"));
    ensure!(
        script.exists(),
        "{} not found: set GPSENSE_NVPTX_SCRIPT, or use --rustup with a nightly toolchain",
        script.display()
    );
    prepare_apt()?;
    eprintln!(
        "ptx: toolchain from {} (first run installs it, about 2 minutes)",
        script.display()
    );
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .with_context(|| format!("cannot run {}", script.display()))?;
    if !out.status.success() {
        bail!(
            "{} failed:\n{}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(parse_env(&String::from_utf8_lossy(&out.stdout)))
}

/// The toolchain script needs Debian's current package lists with the non-free component (for
/// ptxas); on a fresh machine the lists are stale and non-free is off, and the script's own check
/// misses that (`apt-cache show` succeeds for a package with no candidate).
fn prepare_apt() -> Result<()> {
    let home = std::env::var_os("GPSENSE_NVPTX_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/gpsense-nvptx")
        });
    if home.join("ready").exists() {
        return Ok(());
    }
    let sources = Path::new("/etc/apt/sources.list.d/debian.sources");
    if let Ok(text) = std::fs::read_to_string(sources) {
        if text.lines().any(|l| l == "Components: main") {
            eprintln!(
                "ptx: enabling contrib and non-free in {} (for nvidia-cuda-toolkit's ptxas)",
                sources.display()
            );
            let fixed = text.replace(
                "Components: main\n",
                "Components: main contrib non-free non-free-firmware\n",
            );
            std::fs::write(sources, fixed).with_context(|| {
                format!(
                    "cannot write {} (run as root, or install the toolchain first)",
                    sources.display()
                )
            })?;
        }
    }
    eprintln!("ptx: apt-get update");
    let status = Command::new("apt-get")
        .args(["update", "-qq"])
        .status()
        .context("cannot run apt-get")?;
    ensure!(status.success(), "apt-get update failed");
    Ok(())
}

fn rustup_env() -> Result<Vec<(String, String)>> {
    Ok(vec![("RUSTUP_TOOLCHAIN".into(), "nightly".into())])
}

/// `export K='V'` lines into pairs (`${LD_LIBRARY_PATH:+...}` tails dropped: the prefix suffices).
pub fn parse_env(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| {
            let v = v.split("${").next().unwrap_or(v);
            (k.to_owned(), v.trim_matches('\'').to_owned())
        })
        .collect()
}

fn build(root: &Path, arch: &str, env: &[(String, String)], rustup: bool) -> Result<PathBuf> {
    let manifest = root.join("crates/kernels-ptx/Cargo.toml");
    let target_dir = root.join("target/ptx-build").join(arch);
    let mut cmd = Command::new("cargo");
    if rustup {
        cmd.arg("+nightly");
    }
    cmd.args([
        "build",
        "--release",
        "-Zbuild-std=core",
        "--target",
        "nvptx64-nvidia-cuda",
        "--manifest-path",
    ])
    .arg(&manifest)
    .arg("--target-dir")
    .arg(&target_dir)
    .env(
        "CARGO_TARGET_NVPTX64_NVIDIA_CUDA_RUSTFLAGS",
        format!("-Ctarget-cpu={arch}"),
    )
    .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    // The kernels' own release profile is part of what ptxas checks (registers, no spills): a
    // caller's profile overrides (CI's quicker host builds) must not reach the PTX build.
    for (key, _) in std::env::vars_os() {
        if key
            .to_str()
            .is_some_and(|k| k.starts_with("CARGO_PROFILE_"))
        {
            cmd.env_remove(&key);
        }
    }
    eprintln!("ptx: building {arch}");
    let status = cmd.status().context("cannot run cargo")?;
    ensure!(status.success(), "building the kernels for {arch} failed");
    Ok(target_dir.join("nvptx64-nvidia-cuda/release/gpsense_kernels_ptx.ptx"))
}

/// Every kernel of `abi::KERNELS` must be a `.visible .entry` with one parameter of its struct's size.
pub fn check_entries(ptx: &str) -> Result<()> {
    let entries = entry_params(ptx);
    for k in KERNELS {
        let Some(params) = entries.get(k.name) else {
            bail!("kernel {} is not an .entry in the PTX", k.name)
        };
        ensure!(
            params.len() == 1,
            "kernel {} takes {} parameters, the host passes 1",
            k.name,
            params.len()
        );
        ensure!(
            params[0] == k.param_bytes,
            "kernel {} takes {} bytes of parameters, the host passes {} (abi.rs and the entry disagree)",
            k.name,
            params[0],
            k.param_bytes
        );
    }
    Ok(())
}

/// Entry name -> byte size of each parameter (`.param .align A .b8 NAME[SIZE]` or `.param .bN`).
pub fn entry_params(ptx: &str) -> BTreeMap<String, Vec<usize>> {
    let mut out = BTreeMap::new();
    let mut lines = ptx.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.trim().strip_prefix(".visible .entry ") else {
            continue;
        };
        let name = rest.split('(').next().unwrap_or("").trim().to_owned();
        let mut params = Vec::new();
        for p in lines.by_ref() {
            let p = p.trim();
            if p.starts_with(')') {
                break;
            }
            if !p.starts_with(".param") {
                continue;
            }
            let array = p
                .split('[')
                .nth(1)
                .and_then(|s| s.split(']').next())
                .and_then(|s| s.parse().ok());
            if let Some(size) = array.or_else(|| scalar_bits(p).map(|bits| bits / 8)) {
                params.push(size);
            }
        }
        out.insert(name, params);
    }
    out
}

/// The width of a scalar parameter such as `.param .u64 name`.
fn scalar_bits(param: &str) -> Option<usize> {
    let ty = param.split_whitespace().nth(1)?;
    ty.trim_start_matches(|c: char| c == '.' || c.is_ascii_alphabetic())
        .parse()
        .ok()
}

fn assemble(ptxas: &str, arch: &str, ptx: &Path) -> Result<BTreeMap<String, Usage>> {
    let out = Command::new(ptxas)
        .args([&format!("-arch={arch}"), "-v"])
        .arg(ptx)
        .args(["-o", "/dev/null"])
        .output()
        .with_context(|| format!("cannot run {ptxas}"))?;
    let log = String::from_utf8_lossy(&out.stderr);
    ensure!(
        out.status.success(),
        "ptxas -arch={arch} rejected {}:\n{log}",
        ptx.display()
    );
    Ok(parse_ptxas(&log))
}

/// Per entry function: registers, stack frame and shared memory from `ptxas -v`.
pub fn parse_ptxas(log: &str) -> BTreeMap<String, Usage> {
    let mut out: BTreeMap<String, Usage> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or("").to_owned();
            out.entry(name.clone()).or_default();
            current = Some(name);
        } else if let Some(rest) = line.split("Function properties for ").nth(1) {
            // Properties of a helper function end the entry's section unless it is the entry.
            if current.as_deref() != Some(rest.trim()) {
                current = current.filter(|_| false);
            }
        } else if let Some(name) = &current {
            let u = out.entry(name.clone()).or_default();
            if let Some(n) = number_before(line, " bytes stack frame") {
                u.stack = n;
            }
            if let Some(n) = number_after(line, "Used ", " registers") {
                u.registers = n;
            }
            if let Some(n) = number_before(line, " bytes smem") {
                u.shared = n;
            }
        }
    }
    out
}

fn number_before(line: &str, suffix: &str) -> Option<u32> {
    let head = line
        .split(suffix)
        .next()
        .filter(|_| line.contains(suffix))?;
    head.rsplit(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

fn number_after(line: &str, prefix: &str, suffix: &str) -> Option<u32> {
    line.split(prefix)
        .nth(1)?
        .split(suffix)
        .next()?
        .trim()
        .parse()
        .ok()
}

/// Fails when a kernel of [`LIMITS`] uses more registers, stack or shared memory than allowed.
pub fn check_limits(arch: &str, usage: &BTreeMap<String, Usage>) -> Result<()> {
    for (a, kernel, limit) in LIMITS.iter().filter(|(a, ..)| *a == arch) {
        let Some(u) = usage.get(*kernel) else {
            bail!("{a}: ptxas reported nothing for {kernel}");
        };
        ensure!(
            u.registers <= limit.registers && u.stack <= limit.stack && u.shared <= limit.shared,
            "{a}: {kernel} uses {} registers, {} stack bytes and {} shared bytes; the limit is {}, {} and {} (full occupancy on the hot join kernel)",
            u.registers,
            u.stack,
            u.shared,
            limit.registers,
            limit.stack,
            limit.shared
        );
        println!(
            "  {kernel}: within the limit of {} registers and {} stack bytes",
            limit.registers, limit.stack
        );
    }
    Ok(())
}

fn print_usage(arch: &str, ptx: &Path, usage: &BTreeMap<String, Usage>) {
    println!("{arch}: {} accepted by ptxas", ptx.display());
    println!(
        "  {:<30} {:>9} {:>12} {:>12}",
        "kernel", "registers", "stack bytes", "shared bytes"
    );
    for (name, u) in usage {
        println!(
            "  {name:<30} {:>9} {:>12} {:>12}",
            u.registers, u.stack, u.shared
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = ".version 7.8\n.target sm_90\n.visible .entry count_words(\n\t.param .align 8 .b8 count_words_param_0[32]\n)\n{\n}\n.visible .entry two(\n\t.param .u64 two_param_0,\n\t.param .u32 two_param_1\n)\n";

    #[test]
    fn a_kernel_over_its_limit_fails_the_build() {
        let usage = |registers, stack| {
            BTreeMap::from([(
                "extend_warp".to_owned(),
                Usage {
                    registers,
                    stack,
                    shared: 0,
                },
            )])
        };
        assert!(check_limits("sm_90", &usage(64, 0)).is_ok());
        let err = check_limits("sm_90", &usage(72, 0))
            .unwrap_err()
            .to_string();
        assert!(err.contains("72 registers"), "{err}");
        assert!(check_limits("sm_90", &usage(40, 16)).is_err());
        assert!(check_limits("sm_90", &BTreeMap::new()).is_err());
        // Other architectures have no limit.
        assert!(check_limits("sm_80", &usage(100, 100)).is_ok());
    }

    #[test]
    fn reads_entry_parameters() {
        let e = entry_params(PTX);
        assert_eq!(e["count_words"], vec![32]);
        assert_eq!(e["two"].len(), 2);
    }

    #[test]
    fn missing_or_mismatched_entries_fail() {
        let err = check_entries(PTX).unwrap_err().to_string();
        assert!(err.contains("is not an .entry"), "{err}");
        let mut full = String::new();
        for k in KERNELS {
            full.push_str(&format!(
                ".visible .entry {}(\n\t.param .align 8 .b8 p[{}]\n)\n",
                k.name, k.param_bytes
            ));
        }
        check_entries(&full).unwrap();
        let broken = full.replacen(&format!("[{}]", KERNELS[0].param_bytes), "[8]", 1);
        assert!(check_entries(&broken)
            .unwrap_err()
            .to_string()
            .contains("disagree"));
    }

    #[test]
    fn parses_ptxas_usage() {
        let log = "ptxas info    : Compiling entry function 'count_extensions' for 'sm_90'\nptxas info    : Function properties for count_extensions\n    608 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used 124 registers, 16 bytes smem\nptxas info    : Function properties for helper\n    0 bytes stack frame\n";
        let u = parse_ptxas(log);
        assert_eq!(
            u["count_extensions"],
            Usage {
                registers: 124,
                stack: 608,
                shared: 16
            }
        );
    }

    #[test]
    fn parses_the_toolchain_environment() {
        let env = parse_env("export RUSTC='/x/rustc'\nexport LD_LIBRARY_PATH='/a:/b'${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n");
        assert_eq!(
            env,
            vec![
                ("RUSTC".into(), "/x/rustc".into()),
                ("LD_LIBRARY_PATH".into(), "/a:/b".into())
            ]
        );
    }
}
