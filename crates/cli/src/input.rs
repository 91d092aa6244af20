//! The text files a command reads besides graphs (query files, expected counts), read within
//! bounds: a file larger than its bound, a line longer than its bound, a NUL byte or invalid UTF-8 is
//! an error naming the file and line, found without holding more than the bound (`-f /dev/zero`
//! ends at once). A file of queries streams: each query is answered once its text is complete.

use std::io::{self, BufRead, Read};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The longest query (and so the longest line of a query file): 1 MiB.
pub const MAX_QUERY_BYTES: usize = 1 << 20;
/// The largest expected-counts file (`match --expected`), 64 MiB, and its longest line, 4 KiB.
pub const MAX_EXPECTED_BYTES: u64 = 64 << 20;
pub const MAX_EXPECTED_LINE: usize = 4 << 10;

/// A whole text file of at most `max_bytes`, no line longer than `max_line`.
pub fn read_text(path: &Path, max_bytes: u64, max_line: usize) -> Result<String> {
    let file = open(path)?;
    let mut reader = io::BufReader::new(file.take(max_bytes + 1));
    let mut text = String::new();
    let mut line = Vec::new();
    let mut number = 0;
    while next_line(&mut reader, &mut line, max_line, path, &mut number)? {
        text.push_str(as_text(&line, path, number)?);
    }
    if text.len() as u64 > max_bytes {
        bail!("{} is larger than {}", path.display(), size(max_bytes));
    }
    Ok(text)
}

/// Opens `path` for reading, standard input for `-`.
fn open(path: &Path) -> Result<Box<dyn Read + Send>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(io::stdin()));
    }
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(Box::new(file))
}

/// Whether reading `path` (`-`: standard input) may wait for a writer: anything but a regular
/// file (a pipe, a FIFO, a terminal, a socket), or what cannot be told.
fn may_wait(path: &Path) -> bool {
    let meta = if path.as_os_str() == "-" {
        stdin_metadata()
    } else {
        std::fs::metadata(path).ok()
    };
    !meta.is_some_and(|m| m.is_file())
}

#[cfg(unix)]
fn stdin_metadata() -> Option<std::fs::Metadata> {
    use std::os::fd::AsFd;
    let fd = io::stdin().as_fd().try_clone_to_owned().ok()?;
    std::fs::File::from(fd).metadata().ok()
}

#[cfg(not(unix))]
fn stdin_metadata() -> Option<std::fs::Metadata> {
    None
}

/// Reads the next line (with its `\n`) into `line`, at most `max` bytes; false at the end.
fn next_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    max: usize,
    path: &Path,
    number: &mut usize,
) -> Result<bool> {
    line.clear();
    // At most one byte past the bound is read: a longer line is never held whole.
    let n = reader
        .take(max as u64 + 1)
        .read_until(b'\n', line)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if n == 0 {
        return Ok(false);
    }
    *number += 1;
    if line.contains(&0) {
        bail!("{}:{number}: a NUL byte: not a text file", path.display());
    }
    if n > max && line.last() != Some(&b'\n') {
        bail!(
            "{}:{number}: line longer than {}",
            path.display(),
            size(max as u64)
        );
    }
    Ok(true)
}

fn as_text<'l>(line: &'l [u8], path: &Path, number: usize) -> Result<&'l str> {
    std::str::from_utf8(line)
        .map_err(|_| anyhow::anyhow!("{}:{number}: not UTF-8 text", path.display()))
}

/// `1 MiB`, `64 KiB` or bytes.
fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// The queries of a file (or standard input) as they arrive, with the line each starts on: a
/// query is complete when the next one starts or the input ends (see [`Splitter`]). Each is at
/// most [`MAX_QUERY_BYTES`], so memory stays bounded however long the input.
pub struct Queries {
    reader: Box<dyn BufRead + Send>,
    /// Whether reading may wait for a writer (a pipe, a terminal), not only for a disk.
    waits: bool,
    /// The file, for messages.
    path: PathBuf,
    splitter: Splitter,
    line: Vec<u8>,
    number: usize,
    /// The query being read, and the line of its first non-blank byte.
    current: String,
    first_line: Option<usize>,
    /// Complete queries not yet handed out (a line may finish one and start another).
    ready: std::collections::VecDeque<(usize, String)>,
    done: bool,
}

impl Queries {
    pub fn open(path: &Path) -> Result<Self> {
        let mut q = Self::new(Box::new(io::BufReader::new(open(path)?)), path);
        q.waits = may_wait(path);
        Ok(q)
    }

    /// The queries of a command-line argument.
    pub fn from_text(text: String) -> Self {
        let reader = io::BufReader::new(io::Cursor::new(text.into_bytes()));
        Self::new(Box::new(reader), Path::new("the query"))
    }

    fn new(reader: Box<dyn BufRead + Send>, path: &Path) -> Self {
        Queries {
            reader,
            waits: false,
            path: path.to_path_buf(),
            splitter: Splitter::default(),
            line: Vec::new(),
            number: 0,
            current: String::new(),
            first_line: None,
            ready: Default::default(),
            done: false,
        }
    }

    /// Whether another query follows the ones handed out (one has started, at least).
    pub fn more(&self) -> bool {
        !self.ready.is_empty() || self.first_line.is_some()
    }

    /// The next query, `None` at the end of the input.
    pub fn next_query(&mut self) -> Result<Option<(usize, String)>> {
        while self.ready.is_empty() && !self.done {
            self.read_line()?;
        }
        Ok(self.ready.pop_front())
    }

    fn read_line(&mut self) -> Result<()> {
        let max = MAX_QUERY_BYTES;
        if !next_line(
            &mut self.reader,
            &mut self.line,
            max,
            &self.path,
            &mut self.number,
        )? {
            self.done = true;
            self.finish_current();
            return Ok(());
        }
        let line = std::mem::take(&mut self.line);
        let text = as_text(&line, &self.path, self.number)?;
        let mut from = 0;
        let starts = self.splitter.feed(text.as_bytes());
        let earlier = self.splitter.starts - starts.len();
        for (k, start) in starts.into_iter().enumerate() {
            self.append(&text[from..start])?;
            // The first start opens the first query: what came before belongs to it.
            if earlier + k > 0 {
                self.finish_current();
            }
            from = start;
        }
        self.append(&text[from..])?;
        self.line = line;
        Ok(())
    }

    fn append(&mut self, piece: &str) -> Result<()> {
        if self.first_line.is_none() && !piece.trim().is_empty() {
            self.first_line = Some(self.number);
        }
        if self.current.len() + piece.len() > MAX_QUERY_BYTES {
            bail!(
                "{}: the query from line {} is longer than {}",
                self.path.display(),
                self.first_line.unwrap_or(self.number),
                size(MAX_QUERY_BYTES as u64)
            );
        }
        self.current.push_str(piece);
        Ok(())
    }

    /// Hands out the query read so far, unless it is blank, from its first non-blank line (so
    /// that the text's line 1 is the line it is handed out with).
    fn finish_current(&mut self) {
        let mut text = std::mem::take(&mut self.current);
        let blank = text.len() - text.trim_start().len();
        let skipped = text[..blank].rfind('\n').map_or(0, |i| i + 1);
        text.drain(..skipped);
        if let Some(line) = self.first_line.take() {
            self.ready.push_back((line, text));
        }
    }
}

/// Finds where queries start in a text fed line by line. A query starts at `SELECT` or `ASK`, or
/// at the `PREFIX` or `BASE` lines before it, outside braces, quotes, IRIs and comments; a keyword
/// only starts a new one once the previous one has opened its pattern (`{`).
#[derive(Debug)]
pub struct Splitter {
    quote: bool,
    iri: bool,
    comment: bool,
    /// The next byte is escaped (`\"` in a string, `e:a\#` in a prefixed name).
    escaped: bool,
    depth: usize,
    /// The current query has not opened its pattern yet.
    open: bool,
    /// The byte before the next one fed.
    previous: u8,
    /// Query starts found so far.
    starts: usize,
}

impl Default for Splitter {
    fn default() -> Self {
        Splitter {
            quote: false,
            iri: false,
            comment: false,
            escaped: false,
            depth: 0,
            open: true,
            previous: b'\n',
            starts: 0,
        }
    }
}

impl Splitter {
    /// The offsets in `line` (one line, with its `\n` unless it is the last) where queries start.
    pub fn feed(&mut self, line: &[u8]) -> Vec<usize> {
        let mut found = Vec::new();
        for (i, &b) in line.iter().enumerate() {
            let previous = std::mem::replace(&mut self.previous, b);
            if std::mem::take(&mut self.escaped) && b != b'\n' {
                continue;
            }
            match b {
                b'\n' => self.comment = false,
                _ if self.comment => {}
                b'\\' if !self.iri => self.escaped = true,
                b'"' if !self.iri => self.quote = !self.quote,
                b'<' if !self.quote => self.iri = true,
                b'>' if !self.quote => self.iri = false,
                b'#' if !self.quote && !self.iri => self.comment = true,
                _ if self.quote || self.iri => {}
                b'{' => {
                    self.depth += 1;
                    self.open = false;
                }
                b'}' => self.depth = self.depth.saturating_sub(1),
                _ if self.depth > 0 => {}
                _ => {
                    let word_start = !previous.is_ascii_alphanumeric();
                    if word_start && keyword_at(&line[i..]) && (!self.open || self.starts == 0) {
                        found.push(i);
                        self.starts += 1;
                        self.open = true;
                    }
                }
            }
        }
        found
    }
}

/// Whether `text` starts with a keyword that starts a query (any case), as a whole word.
fn keyword_at(text: &[u8]) -> bool {
    ["SELECT", "ASK", "PREFIX", "BASE"].into_iter().any(|k| {
        text.len() >= k.len()
            && text[..k.len()].eq_ignore_ascii_case(k.as_bytes())
            && text
                .get(k.len())
                .is_none_or(|c| !c.is_ascii_alphanumeric() && *c != b':')
    })
}

/// How long a batch waits for one more query from an input that may wait for its writer: a
/// writer's burst (`cat queries | gpsense`) fills the batch, a lone query waits no more than this.
const ARRIVING: std::time::Duration = std::time::Duration::from_millis(2);

/// The queries of a [`Queries`] for batches: from a regular file, read here, every query counts
/// as arrived; from an input that may wait for its writer, read by a thread of its own, so that a
/// batch takes what has arrived and never waits for queries the writer has not sent (a client
/// that sends one query and waits for its answer).
pub enum Arrivals {
    Here(Queries),
    Piped(std::sync::mpsc::Receiver<Result<(usize, String)>>),
}

impl Arrivals {
    /// At most `ahead` queries are read ahead of those taken (none are for batches of one).
    pub fn new(queries: Queries, ahead: usize) -> Self {
        if !queries.waits || ahead <= 1 {
            return Arrivals::Here(queries);
        }
        let (send, receive) = std::sync::mpsc::sync_channel(ahead.max(1));
        let read = move || {
            let mut queries = queries;
            loop {
                let next = queries.next_query().transpose();
                let last = !matches!(next, Some(Ok(_)));
                if next.is_none_or(|q| send.send(q).is_err()) || last {
                    return;
                }
            }
        };
        // Detached: a reader blocked on its writer must not hold the command's exit.
        match std::thread::Builder::new()
            .name("gpsense-queries".into())
            .spawn(read)
        {
            Ok(_) => Arrivals::Piped(receive),
            Err(e) => {
                let (send, receive) = std::sync::mpsc::sync_channel(1);
                let _ = send.send(Err(anyhow::anyhow!("cannot start the input's reader: {e}")));
                Arrivals::Piped(receive)
            }
        }
    }

    /// The next query, waiting for it; `None` at the end of the input.
    pub fn next(&mut self) -> Result<Option<(usize, String)>> {
        match self {
            Arrivals::Here(q) => q.next_query(),
            Arrivals::Piped(r) => r.recv().ok().transpose(),
        }
    }

    /// The next query if it has arrived (within [`ARRIVING`]); `None` when none has.
    pub fn arrived(&mut self) -> Option<Result<Option<(usize, String)>>> {
        use std::sync::mpsc::RecvTimeoutError;
        match self {
            Arrivals::Here(q) => Some(q.next_query()),
            Arrivals::Piped(r) => match r.recv_timeout(ARRIVING) {
                Ok(q) => Some(q.map(Some)),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => Some(Ok(None)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Vec<(usize, String)> {
        let reader = io::BufReader::new(io::Cursor::new(text.as_bytes().to_vec()));
        let mut q = Queries::new(Box::new(reader), Path::new("q.rq"));
        let mut out = Vec::new();
        while let Some(query) = q.next_query().unwrap() {
            out.push(query);
        }
        out
    }

    #[test]
    fn splits_queries_with_their_lines() {
        let text = "# two\nSELECT ?x WHERE { ?x IsA cat } LIMIT 2\n\nselect ?y WHERE { ?y a \"SELECT {\" }\n\
                    PREFIX p: <http://x/#SELECT>\nASK { ?a p:b ?c } SELECT ?z WHERE { ?z ?r ?w }";
        let q = split(text);
        let lines: Vec<usize> = q.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, [1, 4, 5, 6]);
        assert!(q[0].1.starts_with("# two\nSELECT") && q[0].1.ends_with("LIMIT 2\n\n"));
        assert_eq!(q[1].1, "select ?y WHERE { ?y a \"SELECT {\" }\n");
        assert!(q[2].1.starts_with("PREFIX p:") && q[2].1.ends_with("?c } "));
        assert_eq!(q[3].1, "SELECT ?z WHERE { ?z ?r ?w }");
        assert_eq!(split("  \n\n"), []);
        // Escapes: neither `\"` in a string nor `\#` in a prefixed name hides the rest.
        let escaped = split(
            "SELECT * { ?s e:a\\# ?o }\nSELECT * { ?s ?p \"a \\\" }\" }\nSELECT * { a b c }\n",
        );
        assert_eq!(escaped.len(), 3, "{escaped:?}");
        let two = split("# c\nSELECT * { a b c } SELECT * { d e f }\n");
        assert_eq!(two[0], (1, "# c\nSELECT * { a b c } ".to_owned()));
        // No keyword: the whole text is one query, for the parser to judge, from its first
        // non-blank line (so that the parser's line numbers count from there).
        assert_eq!(split("\ncat IsA pet\n"), [(2, "cat IsA pet\n".to_owned())]);
    }

    #[test]
    fn bounds_lines_queries_and_bytes() {
        let open = |text: Vec<u8>| {
            let reader = io::BufReader::new(io::Cursor::new(text));
            Queries::new(Box::new(reader), Path::new("q.rq"))
        };
        let err = |mut q: Queries| loop {
            match q.next_query() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("no error"),
                Err(e) => break e.to_string(),
            }
        };
        let zeros = open(vec![0; 3 << 20]);
        assert_eq!(err(zeros), "q.rq:1: a NUL byte: not a text file");
        let long = open(vec![b'x'; 2 << 20]);
        assert_eq!(err(long), "q.rq:1: line longer than 1 MiB");
        let mut many = b"SELECT * WHERE {\n".to_vec();
        many.extend("?a ?b ?c .\n".repeat(200_000).bytes());
        assert_eq!(
            err(open(many)),
            "q.rq: the query from line 1 is longer than 1 MiB"
        );
        assert_eq!(err(open(b"SELECT \xff".to_vec())), "q.rq:1: not UTF-8 text");
        // A whole file is bounded too.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("e.res");
        std::fs::write(&file, "q 1\n".repeat(50)).unwrap();
        assert_eq!(read_text(&file, 200, 10).unwrap().len(), 200);
        let err = read_text(&file, 199, 10).unwrap_err().to_string();
        assert!(err.ends_with("e.res is larger than 199 bytes"), "{err}");
        // Queries one after another are each within the bound, however many.
        let stream = "SELECT * WHERE { a b c }\n".repeat(100_000);
        assert_eq!(split(&stream).len(), 100_000);
    }
}
