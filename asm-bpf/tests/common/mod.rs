//! Shared by the property tests: a seeded generator with no dependencies.

/// xorshift64*: deterministic, good enough to spread test cases.
pub struct Rng(pub u64);

#[allow(dead_code)]
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// One element of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// A k value that is often small, sometimes an edge, sometimes anything.
    pub fn k(&mut self) -> u32 {
        match self.below(4) {
            0 => self.below(16) as u32,
            1 => *self.pick(&[0, 1, 0xffff, 0x10000, 0xffff_ffff, 0xffff_f000, 0xfff0_0000]),
            2 => 0xffff_f000 + 4 * self.below(17) as u32,
            _ => self.next() as u32,
        }
    }
}
