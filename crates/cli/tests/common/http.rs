//! A minimal HTTP/1.1 client for `gpsense serve` (one request per connection, chunked bodies and
//! trailers decoded) and the running server, killed on every path out of a test.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// A running server, killed on every path out of a test.
pub struct Server {
    pub child: Child,
    pub port: u16,
    /// Kept open: a closed pipe would make the server's own prints fail.
    _stdout: BufReader<ChildStdout>,
    /// Its standard error's lines so far, when captured.
    stderr: Option<Arc<Mutex<Vec<String>>>>,
}

impl Server {
    /// `gpsense serve` on any free loopback port, quiet unless `extra` asks `-v` (then its
    /// standard error is captured).
    pub fn start(extra: &[&str]) -> Server {
        Server::spawn(extra, None, &[])
    }

    /// The same, under a limit of `fds` open descriptors (soft and hard).
    pub fn start_with_fd_limit(fds: u64, extra: &[&str]) -> Server {
        Server::spawn(extra, Some(fds), &[])
    }

    /// The same, with `env` set (the emulator's fault injection).
    pub fn start_with_env(env: &[(&str, &str)], extra: &[&str]) -> Server {
        Server::spawn(extra, None, env)
    }

    fn spawn(extra: &[&str], fds: Option<u64>, env: &[(&str, &str)]) -> Server {
        // Another build may stand in (to check a test against an older server).
        let bin = std::env::var("GPSENSE_SERVE_BIN")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_gpsense").to_owned());
        let mut cmd = match fds {
            Some(n) => {
                let mut c = Command::new("sh");
                c.args(["-c", &format!("ulimit -n {n} && exec \"$0\" \"$@\""), &bin]);
                c
            }
            None => Command::new(&bin),
        };
        let verbose = extra.contains(&"-v");
        cmd.args(["serve", "--bind", "127.0.0.1:0"]);
        if !verbose {
            cmd.arg("-q");
        }
        let mut child = cmd
            .envs(env.iter().copied())
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(if verbose {
                Stdio::piped()
            } else {
                Stdio::inherit()
            })
            .spawn()
            .expect("start gpsense serve");
        let stderr = child.stderr.take().map(|err| {
            let lines = Arc::new(Mutex::new(Vec::new()));
            let sink = lines.clone();
            thread::spawn(move || {
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    sink.lock().expect("lines").push(line);
                }
            });
            lines
        });
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        let read = stdout.read_line(&mut line);
        let port = line
            .trim()
            .strip_prefix("listening on http://127.0.0.1:")
            .and_then(|p| p.parse().ok());
        let mut server = Server {
            child,
            port: 0,
            _stdout: stdout,
            stderr,
        };
        match (read, port) {
            (Ok(_), Some(port)) => server.port = port,
            other => panic!("no address from gpsense serve: {other:?} ({line:?})"),
        }
        server
    }

    /// The first line of the captured standard error containing `needle`, waiting `within`.
    pub fn stderr_line_containing(&mut self, needle: &str, within: Duration) -> String {
        let lines = self.stderr.as_ref().expect("stderr captured (-v)");
        let start = Instant::now();
        loop {
            let found = lines
                .lock()
                .expect("lines")
                .iter()
                .find(|l| l.contains(needle))
                .cloned();
            if let Some(line) = found {
                return line;
            }
            assert!(
                start.elapsed() < within,
                "no line with {needle:?} on stderr"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn get(&self, path: &str, accept: &str) -> Reply {
        request(self.port, "GET", path, &[("Accept", accept)], b"")
    }

    pub fn query(&self, query: &str, accept: &str) -> Reply {
        self.get(&format!("/query?query={}", encode(query)), accept)
    }

    pub fn post(&self, content_type: &str, body: &str, accept: &str) -> Reply {
        request(
            self.port,
            "POST",
            "/query",
            &[("Accept", accept), ("Content-Type", content_type)],
            body.as_bytes(),
        )
    }

    /// Waits until `/health` reports `running` queries.
    pub fn wait_running(&self, running: usize) {
        let want = format!("\"running\":{running},");
        let start = Instant::now();
        while !self.get("/health", "*/*").body.contains(&want) {
            assert!(start.elapsed() < Duration::from_secs(30), "never {want}");
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// A chunked body's trailers.
    pub trailers: Vec<(String, String)>,
    /// A chunked body ended without its last chunk (the server aborted it).
    pub incomplete: bool,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The rows of a TSV answer after its header.
    pub fn tsv_rows(&self) -> Vec<String> {
        assert_eq!(self.status, 200, "{}", self.body);
        let mut rows: Vec<String> = self.body.lines().skip(1).map(str::to_owned).collect();
        rows.sort();
        rows
    }
}

/// One HTTP/1.1 request on its own connection; the whole response.
pub fn request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    send(&mut stream, method, path, headers, body).expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the response");
    parse_response(&raw)
}

/// A GET or bodiless request whose connection may be refused or reset: `None` then.
pub fn try_request(port: u16, method: &str, path: &str, headers: &[(&str, &str)]) -> Option<Reply> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    send(&mut stream, method, path, headers, b"").ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    raw.windows(4)
        .any(|w| w == b"\r\n\r\n")
        .then(|| parse_response(&raw))
}

fn send(
    stream: &mut TcpStream,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(120)))?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)
}

pub fn parse_response(raw: &[u8]) -> Reply {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&raw[..split]);
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines.filter_map(header_line).collect();
    let rest = &raw[split + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let (body, trailers, incomplete) = if chunked {
        dechunk(rest)
    } else {
        (rest.to_vec(), Vec::new(), false)
    };
    Reply {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        trailers,
        incomplete,
    }
}

fn header_line(l: &str) -> Option<(String, String)> {
    let (n, v) = l.split_once(':')?;
    Some((n.trim().to_owned(), v.trim().to_owned()))
}

/// A chunked body: its bytes, its trailers, and whether it lacked its last (empty) chunk.
fn dechunk(mut rest: &[u8]) -> (Vec<u8>, Vec<(String, String)>, bool) {
    let mut body = Vec::new();
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
            return (body, Vec::new(), true);
        };
        let size_text = String::from_utf8_lossy(&rest[..eol]);
        let size_text = size_text.split(';').next().unwrap_or("").trim().to_owned();
        let Ok(size) = usize::from_str_radix(&size_text, 16) else {
            return (body, Vec::new(), true);
        };
        rest = &rest[eol + 2..];
        if size == 0 {
            let text = String::from_utf8_lossy(rest);
            let trailers = text.lines().filter_map(header_line).collect();
            return (body, trailers, !text.ends_with("\r\n"));
        }
        if rest.len() < size + 2 {
            body.extend_from_slice(&rest[..size.min(rest.len())]);
            return (body, Vec::new(), true);
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// Percent-encodes everything but unreserved characters.
pub fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
