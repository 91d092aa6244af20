//! A check of the bytes a peer sends on a data connection against timely's framing (timely
//! 0.32's `MessageHeader`: six big-endian u64s, then `length` bytes), before timely reads them.
//!
//! Timely trusts its peers: a header with a worker index out of range panics its receive thread
//! on an index, and one with an absurd length makes it buffer whatever follows without end. A
//! peer that passed the handshake but sends something else is then an error naming it at once.

/// Words of a message header: channel, source, target lower, target upper, length, seqno.
const WORDS: usize = 6;
const HEADER: usize = 8 * WORDS;
/// The longest message taken for one (timely's messages are containers of a few thousand records).
const MAX_MESSAGE: u64 = 1 << 32;
/// Begins every error of this check, so that the panic it causes in timely's receive thread is
/// reported as such.
pub(crate) const NOT_TIMELY: &str = "not timely's framing";

/// Where the stream from one peer stands.
pub(crate) struct Frames {
    /// This process's first worker and its worker count; all workers of the cluster.
    first: u64,
    workers: u64,
    total: u64,
    header: [u8; HEADER],
    have: usize,
    /// Bytes of the current message's body still to come.
    body: u64,
}

impl Frames {
    pub(crate) fn new(process: usize, workers: usize, processes: usize) -> Frames {
        Frames {
            first: (process * workers) as u64,
            workers: workers as u64,
            total: (processes * workers) as u64,
            header: [0; HEADER],
            have: 0,
            body: 0,
        }
    }

    /// Walks `bytes`, the next ones from the peer; an error at the first header that no peer of
    /// this cluster sends.
    pub(crate) fn check(&mut self, mut bytes: &[u8]) -> Result<(), String> {
        while !bytes.is_empty() {
            if self.body > 0 {
                let skip = self.body.min(bytes.len() as u64);
                self.body -= skip;
                bytes = &bytes[skip as usize..];
                continue;
            }
            let take = (HEADER - self.have).min(bytes.len());
            self.header[self.have..self.have + take].copy_from_slice(&bytes[..take]);
            self.have += take;
            bytes = &bytes[take..];
            if self.have == HEADER {
                self.have = 0;
                self.body = self.validate()?;
            }
        }
        Ok(())
    }

    /// The body length of the complete header held, if it is one this process can receive.
    fn validate(&self) -> Result<u64, String> {
        let w = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&self.header[8 * i..8 * i + 8]);
            u64::from_be_bytes(b)
        };
        let (source, lower, upper, length) = (w(1), w(2), w(3), w(4));
        if length == 0 {
            // The end of the stream: timely writes a header of zeros.
            return if self.header.iter().all(|&b| b == 0) {
                Ok(0)
            } else {
                Err(format!(
                    "{NOT_TIMELY}: an empty message that is not the end"
                ))
            };
        }
        let mine = self.first..self.first + self.workers;
        if source >= self.total || lower >= upper || !mine.contains(&lower) || upper > mine.end {
            return Err(format!(
                "{NOT_TIMELY}: a message from worker {source} to workers {lower}..{upper} \
                 ({} workers in all, {}..{} here)",
                self.total, mine.start, mine.end
            ));
        }
        if length > MAX_MESSAGE {
            return Err(format!("{NOT_TIMELY}: a message of {length} bytes"));
        }
        Ok(length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(words: [u64; WORDS]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    #[test]
    fn messages_pass_in_any_split_and_strangers_do_not() {
        // Process 1 of 2, 2 workers each: workers 2 and 3 are here.
        let mut stream = header([5, 0, 2, 4, 3, 0]);
        stream.extend([7, 8, 9]);
        stream.extend(header([5, 1, 3, 4, 1, 1]));
        stream.push(0);
        stream.extend(header([0; WORDS]));
        for cut in 0..stream.len() {
            let mut f = Frames::new(1, 2, 2);
            f.check(&stream[..cut]).unwrap();
            f.check(&stream[cut..]).unwrap();
        }
        for bad in [
            [5, 0, 0, 1, 3, 0], // to a worker of another process
            [5, 0, 2, 5, 3, 0], // past this process's workers
            [5, 4, 2, 3, 3, 0], // from a worker that does not exist
            [5, 0, 3, 3, 3, 0], // to no worker
            [5, 0, 2, 3, 1 << 40, 0],
            [5, 0, 0, 0, 0, 9], // empty, but not the end
        ] {
            let mut f = Frames::new(1, 2, 2);
            let e = f.check(&header(bad)).unwrap_err();
            assert!(e.starts_with(NOT_TIMELY), "{bad:?}: {e}");
        }
    }
}
