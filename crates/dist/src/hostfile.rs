//! Hostfiles: one `host:port` line per process (timely's `-h`), read with bounds and checked
//! before any process connects, so that a wrong file is an error naming its line, not a
//! connection that fails later with an error that names nothing.

use std::collections::HashMap;
use std::io::Read;
use std::net::IpAddr;
use std::path::Path;

use crate::DistError;

/// The largest hostfile read (a line per process, at most 1024 processes, comments besides).
pub const MAX_HOSTFILE_BYTES: u64 = 1 << 20;
/// The longest line (a DNS name has at most 253 bytes).
pub const MAX_LINE_BYTES: usize = 1024;

/// Reads a hostfile: one `host:port` per process, in process order; blank lines and `#` comments
/// skipped. Exactly `processes` addresses, each valid and named once, or an error naming the line.
pub fn read_hostfile(path: &Path, processes: usize) -> Result<Vec<String>, DistError> {
    let shown = path.display();
    let cannot =
        |e: std::io::Error| DistError::Setup(format!("cannot read the hostfile {shown}: {e}"));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(MAX_HOSTFILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_HOSTFILE_BYTES {
        return Err(DistError::Setup(format!(
            "the hostfile {shown} is larger than 1 MiB: it holds one host:port line per process"
        )));
    }
    let hosts = parse(&bytes).map_err(|e| DistError::Setup(format!("{shown}: {e}")))?;
    if hosts.len() != processes {
        return Err(DistError::Setup(format!(
            "{shown} lists {} address{} for --processes {processes}: one host:port line per \
             process, no more and no fewer",
            hosts.len(),
            if hosts.len() == 1 { "" } else { "es" }
        )));
    }
    Ok(hosts.into_iter().map(|(_, h)| h).collect())
}

/// The addresses of a hostfile's bytes with their line numbers (from 1), each checked, none twice.
fn parse(bytes: &[u8]) -> Result<Vec<(usize, String)>, String> {
    let mut hosts = Vec::new();
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let n = i + 1;
        if raw.len() > MAX_LINE_BYTES {
            return Err(format!(
                "line {n} is longer than {MAX_LINE_BYTES} bytes (a hostfile holds host:port lines)"
            ));
        }
        let line = std::str::from_utf8(raw)
            .map_err(|_| format!("line {n} is not UTF-8 text"))?
            .trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        check_address(line).map_err(|why| format!("line {n}: {line:?} {why}"))?;
        hosts.push((n, line.to_owned()));
    }
    if let Some((first, second, host)) = duplicate(&hosts) {
        return Err(format!(
            "lines {first} and {second} both name {host}: each process needs an address of its own"
        ));
    }
    Ok(hosts)
}

/// Why `line` is not `host:port` (a port from 1 to 65535; an IPv6 host in brackets).
fn check_address(line: &str) -> Result<(), String> {
    let Some((host, port)) = line.rsplit_once(':') else {
        return Err("is not host:port".into());
    };
    if host.is_empty() {
        return Err("has no host before the port".into());
    }
    if host.chars().any(char::is_whitespace) {
        return Err("is not host:port (a host has no spaces)".into());
    }
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
    if bare.is_none() && host.contains(':') {
        return Err("is not host:port (write an IPv6 address in brackets: [::1]:4700)".into());
    }
    if bare.is_some_and(|h| h.parse::<std::net::Ipv6Addr>().is_err()) {
        return Err("is not host:port (brackets hold an IPv6 address)".into());
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(()),
        _ => Err(format!(
            "has port {port:?}: a port is a number from 1 to 65535"
        )),
    }
}

/// The first two lines naming one address (host names compared without case, IP addresses by
/// value), and the address.
fn duplicate(hosts: &[(usize, String)]) -> Option<(usize, usize, String)> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (n, h) in hosts {
        if let Some(&first) = seen.get(&key(h)) {
            return Some((first, *n, h.clone()));
        }
        seen.insert(key(h), *n);
    }
    None
}

/// `host:port` with the host in one spelling.
fn key(address: &str) -> String {
    let (host, port) = address.rsplit_once(':').unwrap_or((address, ""));
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let host = match bare.parse::<IpAddr>() {
        Ok(ip) => ip.to_canonical().to_string(),
        Err(_) => bare.to_ascii_lowercase(),
    };
    format!("{host}:{port}")
}

/// Checks a cluster's address list as [`read_hostfile`] checks a file's (for callers that build
/// the list themselves).
pub fn check_hosts(hosts: &[String], processes: usize) -> Result<(), DistError> {
    if hosts.len() != processes {
        return Err(DistError::Setup(format!(
            "{} addresses for {processes} processes: one per process",
            hosts.len()
        )));
    }
    let numbered: Vec<(usize, String)> = hosts.iter().cloned().enumerate().collect();
    for (i, h) in &numbered {
        check_address(h)
            .map_err(|why| DistError::Setup(format!("the address of process {i}, {h:?}, {why}")))?;
    }
    if let Some((a, b, h)) = duplicate(&numbered) {
        return Err(DistError::Setup(format!(
            "processes {a} and {b} both have the address {h}: each needs its own"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Vec<String>, String> {
        parse(text.as_bytes()).map(|v| v.into_iter().map(|(_, h)| h).collect())
    }

    #[test]
    fn addresses_comments_and_blank_lines() {
        let text = "# cluster\n127.0.0.1:4700\n\n  [::1]:4701  \nnode-2.example:4702\n";
        assert_eq!(
            parsed(text).unwrap(),
            ["127.0.0.1:4700", "[::1]:4701", "node-2.example:4702"]
        );
    }

    #[test]
    fn bad_lines_are_named() {
        for (text, line, what) in [
            ("a:1\nabc\n", "line 2", "is not host:port"),
            ("a:0\n", "line 1", "from 1 to 65535"),
            ("a:99999\n", "line 1", "from 1 to 65535"),
            ("a:x\n", "line 1", "from 1 to 65535"),
            (":5\n", "line 1", "no host"),
            ("::1:4700\n", "line 1", "in brackets"),
            ("[zz]:4700\n", "line 1", "IPv6"),
            ("a b:4\n", "line 1", "no spaces"),
            ("a:1\n\u{0}\u{0}\n", "line 2", "is not host:port"),
        ] {
            let e = parsed(text).unwrap_err();
            assert!(e.contains(line) && e.contains(what), "{text:?}: {e}");
        }
        let e = parsed("a:1\n\u{ff}\n").unwrap_or_else(|e| vec![e]);
        assert!(e[0].contains("line 2"), "{e:?}");
        let long = format!("a:1\n{}:2\n", "h".repeat(MAX_LINE_BYTES));
        let e = parsed(&long).unwrap_err();
        assert!(e.contains("line 2 is longer than"), "{e}");
    }

    #[test]
    fn an_address_named_twice_is_refused_with_both_lines() {
        for text in [
            "h:1\nh:2\nh:1\n",
            "H:1\nh:2\nh:1\n",
            "[::1]:1\nx:2\n[0:0:0:0:0:0:0:1]:1\n",
        ] {
            let e = parsed(text).unwrap_err();
            assert!(e.contains("lines 1 and 3"), "{text:?}: {e}");
        }
        assert!(parsed("h:1\nh:2\n").is_ok());
        let e = check_hosts(&["a:1".into(), "a:1".into()], 2).unwrap_err();
        assert!(e.to_string().contains("processes 0 and 1"), "{e}");
        assert!(check_hosts(&["a:1".into()], 2).is_err());
    }
}
