//! Opening an input: gzip detection by magic bytes, a decompressed sample for format detection, and a
//! count of bytes read from disk for progress.

use std::cell::Cell;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;
use std::rc::Rc;

use flate2::read::MultiGzDecoder;

use super::IngestError;

const SAMPLE_BYTES: usize = 64 * 1024;
const BUFFER_BYTES: usize = 256 * 1024;

/// An opened input: the first bytes (decompressed) kept aside, then the rest of the stream.
pub(crate) struct Input {
    sample: Vec<u8>,
    rest: Box<dyn Read>,
    size: Option<u64>,
    read: Rc<Cell<u64>>,
}

/// Counts the bytes pulled from the underlying file.
struct Counting<R> {
    inner: R,
    read: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.set(self.read.get() + n as u64);
        Ok(n)
    }
}

impl Input {
    pub(crate) fn open(path: &Path) -> Result<Self, IngestError> {
        let io = |source| IngestError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let size = file
            .metadata()
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.len());
        if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
            return Err(io(io::Error::other("is a directory")));
        }
        Self::new(Box::new(file), size).map_err(io)
    }

    pub(crate) fn from_bytes(bytes: Vec<u8>) -> io::Result<Self> {
        let size = Some(bytes.len() as u64);
        Self::new(Box::new(Cursor::new(bytes)), size)
    }

    fn new(raw: Box<dyn Read>, size: Option<u64>) -> io::Result<Self> {
        let read = Rc::new(Cell::new(0));
        let mut raw = BufReader::with_capacity(
            BUFFER_BYTES,
            Counting {
                inner: raw,
                read: read.clone(),
            },
        );
        let gzip = raw.fill_buf()?.starts_with(&[0x1f, 0x8b]);
        let mut stream: Box<dyn Read> = if gzip {
            Box::new(MultiGzDecoder::new(raw))
        } else {
            Box::new(raw)
        };
        let mut sample = Vec::with_capacity(SAMPLE_BYTES);
        (&mut stream)
            .take(SAMPLE_BYTES as u64)
            .read_to_end(&mut sample)?;
        Ok(Input {
            sample,
            rest: stream,
            size,
            read,
        })
    }

    /// The first (up to 64 KiB) decompressed bytes.
    pub(crate) fn sample(&self) -> &[u8] {
        &self.sample
    }

    /// Size on disk, when known.
    pub(crate) fn size(&self) -> Option<u64> {
        self.size
    }

    /// A shared counter of the bytes read from disk so far.
    pub(crate) fn counter(&self) -> Rc<Cell<u64>> {
        self.read.clone()
    }

    /// The whole decompressed stream, sample first.
    pub(crate) fn into_reader(self) -> impl BufRead {
        BufReader::with_capacity(BUFFER_BYTES, Cursor::new(self.sample).chain(self.rest))
    }
}
