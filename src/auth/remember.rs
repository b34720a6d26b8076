//! Verdicts already reached, per loop: a fixed table of [`SETS`] × [`WAYS`] entries,
//! each the keyed hash of an `Authorization` value (SipHash-2-4, 128 bits, under a key
//! drawn at random when the loop starts) and what its check found.
//!
//! Input: header values and their verdicts. Output: the verdict of a value seen before,
//! or nothing. Why: bcrypt costs milliseconds by design and a loop is one thread; a
//! browser sends the same value with every request, so after the first check a request
//! costs one SipHash of a few dozen bytes. The table holds no password and no value,
//! only tags: reading it (a core dump) gives nothing to replay. A value whose tag is
//! not there is checked anew; an entry is replaced, least recently used first, within
//! its set, except that a refusal never takes the place of a login: guesses sprayed from
//! many addresses cannot push remembered users out (and back into the budget's queue). Nothing expires: the table lives as long as the loop, and a HUP (the file
//! changed) starts new workers with empty tables. No allocation after [`Memory::new`].

use super::htpasswd::Checked;
use crate::crypt::siphash::sip128;

/// Sets of the table (a power of two).
pub(crate) const SETS: usize = 256;

/// Entries a set holds.
pub(crate) const WAYS: usize = 4;

#[derive(Clone, Copy, Debug)]
struct Entry {
    tag: u128,
    /// When it was last used (0: empty).
    used: u32,
    checked: Checked,
}

const EMPTY: Entry = Entry {
    tag: 0,
    used: 0,
    checked: Checked::UnknownUser,
};

/// The remembered verdicts of one loop.
#[derive(Debug)]
pub(crate) struct Memory {
    key: [u8; 16],
    entries: Box<[Entry]>,
    clock: u32,
}

/// A value's name in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tag(u128);

impl Memory {
    /// An empty table whose tags are keyed with `key` (random, per loop).
    pub(crate) fn new(key: [u8; 16]) -> Memory {
        Memory {
            key,
            entries: vec![EMPTY; SETS * WAYS].into_boxed_slice(),
            clock: 0,
        }
    }

    /// The tag of a header value shown to host `host`: another host (whose users may
    /// differ) names the same value with another tag.
    pub(crate) fn tag(&self, value: &[u8], host: u16) -> Tag {
        let mut key = self.key;
        let salt = host.to_le_bytes();
        key[..2].iter_mut().zip(salt).for_each(|(k, h)| *k ^= h);
        Tag(u128::from_le_bytes(sip128(&key, value)))
    }

    fn set(&mut self, tag: Tag) -> &mut [Entry] {
        let at = (tag.0 as usize & (SETS - 1)) * WAYS;
        &mut self.entries[at..at + WAYS]
    }

    fn tick(&mut self) -> u32 {
        self.clock = self.clock.wrapping_add(1).max(1);
        self.clock
    }

    /// The verdict remembered for `tag`, if any.
    pub(crate) fn recall(&mut self, tag: Tag) -> Option<Checked> {
        let now = self.tick();
        let e = self
            .set(tag)
            .iter_mut()
            .find(|e| e.used != 0 && e.tag == tag.0)?;
        e.used = now;
        Some(e.checked)
    }

    /// Remembers `checked` for `tag`, in place of the set's least recently used entry
    /// (for a refusal: of those that are no login; with none, it is not remembered).
    pub(crate) fn keep(&mut self, tag: Tag, checked: Checked) {
        let now = self.tick();
        let set = self.set(tag);
        let refusal = checked != Checked::Valid;
        // Empty entries have `used` 0, so they go first; a wrapped clock only makes one
        // choice less apt, never a wrong verdict.
        let victim = set
            .iter_mut()
            .filter(|e| !refusal || e.used == 0 || e.checked != Checked::Valid || e.tag == tag.0)
            .min_by_key(|e| if e.tag == tag.0 { 0 } else { e.used });
        let Some(victim) = victim else {
            return;
        };
        *victim = Entry {
            tag: tag.0,
            used: now,
            checked,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_per_value_and_forgets_the_least_recent() {
        let mut m = Memory::new([7; 16]);
        let a = m.tag(b"Basic YTpi", 0);
        assert_eq!(m.recall(a), None);
        m.keep(a, Checked::Valid);
        assert_eq!(m.recall(a), Some(Checked::Valid));
        let b = m.tag(b"Basic YTpj", 0);
        assert_ne!(a, b);
        m.keep(b, Checked::WrongPassword);
        assert_eq!(m.recall(b), Some(Checked::WrongPassword));
        assert_eq!(m.recall(a), Some(Checked::Valid));
        // Another key names the same value differently.
        assert_ne!(Memory::new([8; 16]).tag(b"Basic YTpi", 0), a);
        assert_ne!(m.tag(b"Basic YTpi", 1), a, "another host, another tag");
        // Values that share a's set: the least recently used goes first, a stays.
        let same_set: Vec<Tag> = (0u32..)
            .map(|i| m.tag(format!("Basic {i}").as_bytes(), 0))
            .filter(|t| t.0 as usize % SETS == a.0 as usize % SETS)
            .take(WAYS)
            .collect();
        for t in &same_set[..WAYS - 1] {
            m.keep(*t, Checked::Valid);
            assert_eq!(m.recall(a), Some(Checked::Valid));
        }
        m.keep(same_set[WAYS - 1], Checked::Valid);
        assert_eq!(m.recall(a), Some(Checked::Valid), "a was used last");
        assert_eq!(m.recall(same_set[0]), None, "the oldest went");
        // Keeping a tag again replaces its own entry, not another.
        m.keep(a, Checked::WrongPassword);
        assert_eq!(m.recall(a), Some(Checked::WrongPassword));
        assert_eq!(m.recall(same_set[WAYS - 1]), Some(Checked::Valid));
    }

    #[test]
    fn refusals_never_push_logins_out() {
        let mut m = Memory::new([9; 16]);
        let tags: Vec<Tag> = (0u32..)
            .map(|i| m.tag(format!("Basic {i}").as_bytes(), 0))
            .filter(|t| t.0 as usize % SETS == 5)
            .take(WAYS + 3)
            .collect();
        for t in &tags[..WAYS] {
            m.keep(*t, Checked::Valid);
        }
        for t in &tags[WAYS..] {
            m.keep(*t, Checked::WrongPassword);
            assert_eq!(m.recall(*t), None, "not remembered: the set holds logins");
        }
        for t in &tags[..WAYS] {
            assert_eq!(m.recall(*t), Some(Checked::Valid));
        }
        // A login takes the place of the least recent login.
        m.keep(tags[WAYS], Checked::Valid);
        assert_eq!(m.recall(tags[WAYS]), Some(Checked::Valid));
        assert_eq!(m.recall(tags[0]), None);
    }
}
