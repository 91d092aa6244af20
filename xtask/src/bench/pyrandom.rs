//! Python's `random.Random(seed).shuffle(list)` (CPython's Mersenne Twister, `init_by_array` seeding
//! and `_randbelow_with_getrandbits`), so that a workload chosen "as `random.Random(7).shuffle`" is
//! the same list here as in Python.

/// MT19937 seeded as CPython seeds it from a non-negative integer.
pub struct PyRandom {
    mt: [u32; 624],
    index: usize,
}

impl PyRandom {
    /// `random.Random(seed)` for a non-negative integer seed below 2^64.
    pub fn new(seed: u64) -> Self {
        // CPython: the absolute value as 32-bit words, least significant first (at least one).
        let mut key = vec![seed as u32];
        if seed >> 32 != 0 {
            key.push((seed >> 32) as u32);
        }
        let mut r = PyRandom {
            mt: [0; 624],
            index: 624,
        };
        r.init_genrand(19_650_218);
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..624.max(key.len()) {
            let prev = r.mt[i - 1] ^ (r.mt[i - 1] >> 30);
            r.mt[i] = (r.mt[i] ^ prev.wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= 624 {
                r.mt[0] = r.mt[623];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..623 {
            let prev = r.mt[i - 1] ^ (r.mt[i - 1] >> 30);
            r.mt[i] = (r.mt[i] ^ prev.wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= 624 {
                r.mt[0] = r.mt[623];
                i = 1;
            }
        }
        r.mt[0] = 0x8000_0000;
        r
    }

    fn init_genrand(&mut self, s: u32) {
        self.mt[0] = s;
        for i in 1..624 {
            let prev = self.mt[i - 1] ^ (self.mt[i - 1] >> 30);
            self.mt[i] = 1_812_433_253u32.wrapping_mul(prev).wrapping_add(i as u32);
        }
        self.index = 624;
    }

    fn next_u32(&mut self) -> u32 {
        if self.index >= 624 {
            for k in 0..624 {
                let y = (self.mt[k] & 0x8000_0000) | (self.mt[(k + 1) % 624] & 0x7fff_ffff);
                let mut v = self.mt[(k + 397) % 624] ^ (y >> 1);
                if y & 1 == 1 {
                    v ^= 0x9908_b0df;
                }
                self.mt[k] = v;
            }
            self.index = 0;
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `getrandbits(k)` for `1 <= k <= 32`.
    fn getrandbits(&mut self, k: u32) -> u32 {
        self.next_u32() >> (32 - k)
    }

    /// `_randbelow(n)` for `n >= 1` (and `n < 2^32`).
    fn randbelow(&mut self, n: u32) -> u32 {
        let k = 32 - n.leading_zeros();
        loop {
            let r = self.getrandbits(k);
            if r < n {
                return r;
            }
        }
    }

    /// `shuffle(x)`: Fisher-Yates from the end, as CPython.
    pub fn shuffle<T>(&mut self, x: &mut [T]) {
        for i in (1..x.len()).rev() {
            let j = self.randbelow(i as u32 + 1) as usize;
            x.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_cpython_random_7() {
        // python3 -c "import random; r = random.Random(7); print([r.getrandbits(32) for _ in range(3)])"
        let mut r = PyRandom::new(7);
        let words: Vec<u32> = (0..3).map(|_| r.next_u32()).collect();
        assert_eq!(words, [1390851128, 4071050724, 647892279]);
        // python3 -c "import random; x = list(range(20)); random.Random(7).shuffle(x); print(x)"
        let mut x: Vec<u32> = (0..20).collect();
        PyRandom::new(7).shuffle(&mut x);
        assert_eq!(
            x,
            [17, 15, 11, 18, 7, 6, 19, 3, 14, 0, 9, 5, 16, 8, 13, 2, 1, 12, 4, 10]
        );
    }

    #[test]
    fn matches_cpython_on_a_long_list_and_a_large_seed() {
        // python3 -c "import random; x = list(range(1000)); random.Random(7).shuffle(x); print(x[:8], x[-3:])"
        let mut x: Vec<u32> = (0..1000).collect();
        PyRandom::new(7).shuffle(&mut x);
        assert_eq!(&x[..8], [878, 857, 349, 313, 382, 850, 927, 194]);
        assert_eq!(&x[997..], [154, 970, 331]);
        // python3 -c "import random; x = list(range(10)); random.Random(2**40 + 5).shuffle(x); print(x)"
        let mut x: Vec<u32> = (0..10).collect();
        PyRandom::new((1 << 40) + 5).shuffle(&mut x);
        assert_eq!(x, [1, 2, 3, 6, 7, 0, 5, 4, 9, 8]);
    }
}
