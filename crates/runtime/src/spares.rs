//! Values an engine keeps between queries so that a query reuses what an earlier one allocated
//! (a small query's allocations were a fifth to a third of its time): a search's working arrays,
//! a query's layout.

use std::sync::Mutex;

/// What a kept value holds on to, in bytes (its vectors' capacities), and how many of its kind are
/// kept at most.
pub trait Room {
    fn room_bytes(&self) -> usize;

    /// Values kept at most: one per query or worker running at once is plenty.
    const KEEP: usize = 64;
}

/// Spare values of one kind: at most [`Room::KEEP`] of them, none holding more than
/// [`Spares::KEEP_BYTES`], so that one huge query does not pin its memory for the engine's life.
#[derive(Debug)]
pub struct Spares<T>(Mutex<Vec<T>>);

impl<T> Default for Spares<T> {
    fn default() -> Self {
        Spares(Mutex::new(Vec::new()))
    }
}

impl<T: Default + Room> Spares<T> {
    const KEEP_BYTES: usize = 64 << 20;

    /// Spares holding `v` already (a value prepared before the first query).
    pub fn holding(v: T) -> Self {
        Spares(Mutex::new(vec![v]))
    }

    /// A spare value, or a new one.
    pub fn take(&self) -> T {
        let spare = self.0.lock().unwrap_or_else(|p| p.into_inner()).pop();
        spare.unwrap_or_default()
    }

    /// Keeps `v` for a later [`Spares::take`] unless there are enough or it is too big.
    pub fn give(&self, v: T) {
        if v.room_bytes() > Self::KEEP_BYTES {
            return;
        }
        let mut spare = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if spare.len() < T::KEEP {
            spare.push(v);
        }
    }
}

/// The bytes a vector's capacity holds.
pub fn bytes_of<T>(v: &Vec<T>) -> usize {
    v.capacity() * std::mem::size_of::<T>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Buf(Vec<u8>);

    impl Room for Buf {
        fn room_bytes(&self) -> usize {
            bytes_of(&self.0)
        }
    }

    #[test]
    fn a_value_given_back_is_taken_again_unless_it_is_too_big() {
        let spares = Spares::<Buf>::default();
        spares.give(Buf(Vec::with_capacity(100)));
        assert!(spares.take().0.capacity() >= 100);
        assert_eq!(spares.take().0.capacity(), 0);
        spares.give(Buf(Vec::with_capacity(Spares::<Buf>::KEEP_BYTES + 1)));
        assert_eq!(spares.take().0.capacity(), 0);
    }
}
