//! Refitting `auto`'s constants to what a device and the CPU beside it measured, query by query:
//! the constants the model leaves to calibration ([`DeviceCosts`]) are fitted so that its two
//! estimates come closest, in ratio, to the measured times (`cargo xtask calibrate` reads the
//! times of `gpsense match` on both engines and writes the constants file).
//!
//! The model is linear in its constants for a given query shape, but the times span six orders of
//! magnitude, so the fit minimises the squared log of estimate over measurement, one constant at a
//! time (a golden-section search over its logarithm), sweep after sweep: a few constants, a few
//! thousand queries, well under a second. Launches and reads per query shape come first, by least
//! squares on the counts the device reported, when it reported them.

use super::{DeviceCosts, QueryShape};
use crate::EngineKind;

/// One query as measured: its shape, whether it was counted, and the milliseconds of each engine
/// alone (`dfs` on the constants' `cpu_threads`), with the device's launches and reads if known.
#[derive(Clone, Debug)]
pub struct Measured {
    pub shape: QueryShape,
    pub count_only: bool,
    pub device_ms: f64,
    pub dfs_ms: f64,
    pub launches: Option<f64>,
    pub reads: Option<f64>,
}

/// How well a set of constants fits queries: the median factor between estimate and measurement
/// of each engine, and what the lone picks cost against the faster engine per query and against
/// each engine alone (measured milliseconds, summed).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Score {
    pub dfs_factor: f64,
    pub device_factor: f64,
    pub picks_ms: f64,
    pub best_ms: f64,
    pub dfs_alone_ms: f64,
    pub device_alone_ms: f64,
    /// Queries the picks sent to the device.
    pub on_device: usize,
}

/// The constants [`fit`] changes, by [`DeviceCosts`] field: dfs's, then the device's.
const DFS: [&str; 3] = ["dfs_query_us", "dfs_space_ns", "dfs_partial_ns"];
const DEVICE: [&str; 7] = [
    "device_query_us",
    "launch_us",
    "read_us",
    "device_space_ns",
    "device_partial_ns",
    "device_counted_ns",
    "device_variable_ns",
];
/// Sweeps over the constants; each searches its logarithm over this many e-folds either side.
const SWEEPS: usize = 12;
const SPAN: f64 = 12.0;
/// The weight that keeps a constant near its value before the fit, per squared e-fold: a constant
/// the times hardly depend on (a term no query reaches, or one the others stand in for) stays
/// where it was instead of running off to 0 (its e-folds weigh against a mean squared log
/// error of about 2 on yeast).
const PRIOR: f64 = 0.01;

/// `base` with its launches, reads, dfs and device constants refitted to `queries` (measured with
/// `dfs` on `base.cpu_threads` threads). A constant no query depends on (no edge variable, no
/// count at the last level) keeps its value.
pub fn fit(base: &DeviceCosts, queries: &[Measured]) -> DeviceCosts {
    let mut costs = base.clone();
    fit_shape_counts(&mut costs, queries);
    let mut prior = base.clone();
    for (names, engine) in [(&DFS[..], EngineKind::Dfs), (&DEVICE[..], EngineKind::Gpu)] {
        for _ in 0..SWEEPS {
            for name in names {
                let was = prior.field(name).map_or(0.0, |v| *v);
                fit_one(&mut costs, name, engine, queries, was);
            }
        }
    }
    costs
}

/// How `costs` fits `queries`: each engine's median estimate/measurement factor (1 at best) and
/// the lone picks' measured time.
pub fn score(costs: &DeviceCosts, queries: &[Measured]) -> Score {
    let threads = costs.cpu_threads as usize;
    let factor = |ratios: Vec<f64>| {
        let mut logs: Vec<f64> = ratios.iter().map(|r| r.ln().abs()).collect();
        logs.sort_by(f64::total_cmp);
        logs.get(logs.len() / 2).map_or(1.0, |l| l.exp())
    };
    let mut s = Score::default();
    let (mut dfs_ratios, mut device_ratios) = (Vec::new(), Vec::new());
    for q in queries {
        let c = costs.choose(&q.shape, q.count_only, None, threads);
        dfs_ratios.push(c.dfs_ms / q.dfs_ms);
        device_ratios.push(c.device_ms / q.device_ms);
        let on_device = c.pick == EngineKind::Gpu;
        s.on_device += usize::from(on_device);
        s.picks_ms += if on_device { q.device_ms } else { q.dfs_ms };
        s.best_ms += q.device_ms.min(q.dfs_ms);
        s.dfs_alone_ms += q.dfs_ms;
        s.device_alone_ms += q.device_ms;
    }
    s.dfs_factor = factor(dfs_ratios);
    s.device_factor = factor(device_ratios);
    s
}

/// Launches per query, node and edge, and reads per query and node, by least squares on the
/// device's counts (kept where no query reported them).
fn fit_shape_counts(costs: &mut DeviceCosts, queries: &[Measured]) {
    let rows = |y: fn(&Measured) -> Option<f64>, x: fn(&QueryShape) -> Vec<f64>| {
        queries
            .iter()
            .filter_map(|q| Some((x(&q.shape), y(q)?)))
            .collect::<Vec<_>>()
    };
    let launches = rows(
        |q| q.launches,
        |s| vec![1.0, s.nodes as f64, s.edges as f64],
    );
    if let Some([a, b, c]) = least_squares::<3>(&launches) {
        costs.launches_per_query = a;
        costs.launches_per_node = b;
        costs.launches_per_edge = c;
    }
    let reads = rows(|q| q.reads, |s| vec![1.0, s.nodes as f64]);
    if let Some([a, b]) = least_squares::<2>(&reads) {
        costs.reads_per_query = a;
        costs.reads_per_node = b;
    }
}

/// Non-negative least squares of `y` on `x` by the normal equations, a coefficient that comes
/// out negative fixed at 0 and the rest solved again; `None` with too few rows or a singular
/// system.
fn least_squares<const K: usize>(rows: &[(Vec<f64>, f64)]) -> Option<[f64; K]> {
    let mut free = [true; K];
    loop {
        let idx: Vec<usize> = (0..K).filter(|&i| free[i]).collect();
        let k = idx.len();
        if rows.len() < K || k == 0 {
            return None;
        }
        // [A | b] for the free coefficients.
        let mut m = vec![vec![0.0; k + 1]; k];
        for (x, y) in rows {
            for (r, &i) in idx.iter().enumerate() {
                for (c, &j) in idx.iter().enumerate() {
                    m[r][c] += x[i] * x[j];
                }
                m[r][k] += x[i] * y;
            }
        }
        let solved = gauss(m)?;
        match solved.iter().position(|&v| v < 0.0) {
            Some(p) => free[idx[p]] = false,
            None => {
                let mut out = [0.0; K];
                for (&i, v) in idx.iter().zip(solved) {
                    out[i] = v;
                }
                return Some(out);
            }
        }
    }
}

/// Solves the augmented system `m` by Gaussian elimination with partial pivoting.
fn gauss(mut m: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let k = m.len();
    for col in 0..k {
        let pivot = (col..k).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[pivot][col].abs() < 1e-12 {
            return None;
        }
        m.swap(col, pivot);
        let lead = m[col].clone();
        for (r, row) in m.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / lead[col];
                for (x, l) in row[col..].iter_mut().zip(&lead[col..]) {
                    *x -= f * l;
                }
            }
        }
    }
    Some((0..k).map(|r| m[r][k] / m[r][r]).collect())
}

/// Sets constant `name` to the value in `[v·e^-SPAN, v·e^SPAN]` (from 1 when it is 0) that
/// minimises `engine`'s squared log error over `queries`, plus [`PRIOR`] times the squared log of
/// its ratio to `was` (its value before the fit), if that is lower than its own value's.
fn fit_one(
    costs: &mut DeviceCosts,
    name: &str,
    engine: EngineKind,
    queries: &[Measured],
    was: f64,
) {
    let Some(&mut start) = costs.field(name) else {
        return;
    };
    let anchor = if was > 0.0 { was.ln() } else { 0.0 };
    // The error with the constant at e^log_v (ln 0 = -inf: the constant at 0).
    let mut error = |log_v: f64| {
        if let Some(f) = costs.field(name) {
            *f = log_v.exp();
        }
        let drift = if log_v.is_finite() {
            log_v - anchor
        } else {
            SPAN
        };
        log_error(costs, engine, queries) + PRIOR * drift * drift
    };
    let centre = if start > 0.0 { start.ln() } else { 0.0 };
    let best = golden(&mut error, centre - SPAN, centre + SPAN);
    let value = if error(best) < error(start.ln()) {
        best.exp()
    } else {
        start
    };
    if let Some(f) = costs.field(name) {
        *f = value;
    }
}

/// The minimum of `f` over `[lo, hi]` by golden-section search.
fn golden(mut f: impl FnMut(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
    const R: f64 = 0.618_033_988_749_895;
    let (mut a, mut b) = (hi - R * (hi - lo), lo + R * (hi - lo));
    let (mut fa, mut fb) = (f(a), f(b));
    for _ in 0..60 {
        if fa < fb {
            hi = b;
            (b, fb) = (a, fa);
            a = hi - R * (hi - lo);
            fa = f(a);
        } else {
            lo = a;
            (a, fa) = (b, fb);
            b = lo + R * (hi - lo);
            fb = f(b);
        }
    }
    (lo + hi) / 2.0
}

/// Mean squared log of `engine`'s estimate over its measurement.
fn log_error(costs: &DeviceCosts, engine: EngineKind, queries: &[Measured]) -> f64 {
    let threads = costs.cpu_threads as usize;
    let sum: f64 = queries
        .iter()
        .map(|q| {
            let (est, meas) = match engine {
                EngineKind::Dfs => (
                    costs.dfs_ms(&q.shape, q.count_only, None, threads),
                    q.dfs_ms,
                ),
                _ => (costs.device_ms(&q.shape, q.count_only, None), q.device_ms),
            };
            (est.max(1e-9) / meas.max(1e-9)).ln().powi(2)
        })
        .sum();
    sum / queries.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(nodes: usize, edges: usize, levels: Vec<f64>, space: f64) -> QueryShape {
        QueryShape {
            levels,
            space,
            nodes,
            edges,
            ..Default::default()
        }
    }

    /// Times made by known constants are fitted back: the factors come near 1 and the constants
    /// near the ones that made them, from a base far off.
    #[test]
    fn constants_that_made_the_times_are_found_again() {
        let truth = DeviceCosts {
            device_query_us: 900.0,
            launch_us: 4.0,
            read_us: 30.0,
            device_partial_ns: 0.5,
            dfs_query_us: 40.0,
            dfs_space_ns: 20.0,
            dfs_partial_ns: 150.0,
            ..DeviceCosts::calibrated_h100()
        };
        let queries: Vec<Measured> = (0..60)
            .map(|i| {
                let n = 4 + i % 9;
                let s = shape(
                    n,
                    n + i % 5,
                    vec![10f64.powi(1 + (i % 8) as i32); 3],
                    1e3 * (1 + i % 7) as f64,
                );
                let (launches, reads) = truth.launches_and_reads(&s);
                Measured {
                    device_ms: truth.device_ms(&s, true, None),
                    dfs_ms: truth.dfs_ms(&s, true, None, 16),
                    shape: s,
                    count_only: true,
                    launches: Some(launches),
                    reads: Some(reads),
                }
            })
            .collect();
        let base = DeviceCosts {
            dfs_partial_ns: 6.0,
            device_query_us: 90.0,
            ..DeviceCosts::calibrated_h100()
        };
        let before = score(&base, &queries);
        let fitted = fit(&base, &queries);
        let after = score(&fitted, &queries);
        assert!(before.dfs_factor > 2.0, "{before:?}");
        // Near 1: the prior holds each constant a little towards where it started.
        assert!(after.dfs_factor < 1.1, "{after:?} {fitted:?}");
        assert!(after.device_factor < 1.15, "{after:?}");
        assert!(
            (fitted.dfs_partial_ns / 150.0 - 1.0).abs() < 0.1,
            "{fitted:?}"
        );
        assert!((fitted.launches_per_node - 3.0).abs() < 1e-6, "{fitted:?}");
        assert!(after.picks_ms <= before.picks_ms + 1e-9);
    }

    /// Every key is a constant, and a file written is read back the same (to 4 digits).
    #[test]
    fn constants_written_to_a_file_read_back() {
        let mut c = DeviceCosts {
            device: "an H200".into(),
            dfs_partial_ns: 123.456_78,
            ..DeviceCosts::calibrated_h100()
        };
        for key in DeviceCosts::KEYS {
            assert!(c.field(key).is_some(), "{key}");
        }
        let back = DeviceCosts::parse(&c.to_file()).unwrap();
        assert_eq!(back.dfs_partial_ns, 123.5);
        assert_eq!(back.device, "an H200");
        c.dfs_partial_ns = 123.5;
        assert_eq!(back, c);
    }

    #[test]
    fn least_squares_keeps_coefficients_non_negative() {
        // y = 2 + 3x - z/2: the third coefficient would be negative, so it is held at 0.
        let rows: Vec<(Vec<f64>, f64)> = (0..12)
            .map(|i| {
                let (x, z) = (i as f64, (i % 3) as f64);
                (vec![1.0, x, z], 2.0 + 3.0 * x - 0.5 * z)
            })
            .collect();
        let [a, b, c] = least_squares::<3>(&rows).unwrap();
        assert!(a >= 0.0 && b >= 0.0, "{a} {b}");
        assert_eq!(c, 0.0);
        assert!((b - 3.0).abs() < 0.1, "{b}");
        assert!(least_squares::<2>(&[]).is_none());
    }
}
