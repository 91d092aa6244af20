//! Number formatting for human-readable reports (the CLI's and the Python package's).

/// `1234567` -> `1,234,567`; any unsigned width up to `u128` (counts are `u128`).
///
/// ```
/// assert_eq!(gpsense::fmt::thousands(1_234_567u64), "1,234,567");
/// ```
pub fn thousands(n: impl Into<u128>) -> String {
    let digits = n.into().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes in the largest fitting binary unit.
///
/// ```
/// assert_eq!(gpsense::fmt::bytes(1536), "1.5 KiB");
/// ```
pub fn bytes(n: usize) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A duration in milliseconds with one decimal (`12.3 ms`).
///
/// ```
/// assert_eq!(gpsense::fmt::millis(std::time::Duration::from_micros(1500)), "1.5 ms");
/// ```
pub fn millis(d: std::time::Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_numbers() {
        assert_eq!(super::thousands(0u64), "0");
        assert_eq!(super::thousands(999u64), "999");
        assert_eq!(super::thousands(1000u64), "1,000");
        assert_eq!(super::thousands(78093u64), "78,093");
        assert_eq!(super::thousands(1234567u64), "1,234,567");
        assert_eq!(
            super::thousands(5_753_810_593_750_889_762_793u128),
            "5,753,810,593,750,889,762,793"
        );
        assert_eq!(super::bytes(512), "512 B");
        assert_eq!(super::bytes(3 << 20), "3.0 MiB");
    }
}
