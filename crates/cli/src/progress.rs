//! A progress bar on stderr for long inputs (hidden when stderr is not a terminal).

use std::cell::RefCell;
use std::path::Path;

use gpsense_graph::ingest::Progress;
use indicatif::{ProgressBar, ProgressStyle};

/// Inputs smaller than this finish before a bar would be worth drawing.
const MIN_BYTES: u64 = 4 << 20;

#[derive(Default)]
pub struct Bar {
    bar: RefCell<Option<ProgressBar>>,
}

impl Progress for Bar {
    fn start(&self, path: &Path, total_bytes: Option<u64>) {
        let bar = match total_bytes {
            Some(_) if crate::out::quiet() => return,
            Some(n) if n >= MIN_BYTES => ProgressBar::new(n),
            _ => return,
        };
        let style = ProgressStyle::with_template("{msg} [{bar:40}] {bytes}/{total_bytes} ({eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        bar.set_message(path.display().to_string());
        *self.bar.borrow_mut() = Some(bar);
    }

    fn position(&self, bytes: u64) {
        if let Some(bar) = &*self.bar.borrow() {
            bar.set_position(bytes);
        }
    }

    fn finish(&self) {
        if let Some(bar) = self.bar.borrow_mut().take() {
            bar.finish_and_clear();
        }
    }
}
