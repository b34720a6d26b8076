//! Which row of the per-host response counters each host counts into, kept by name for
//! the life of the master, so that a reload which reorders, adds or removes host blocks
//! leaves every count with the host that answered it.
//!
//! Input: the hosts of the configuration at start and of each reload (`config::VHost`).
//! Output: each host's `row`, set in place, and the name of every row for `/metrics`.
//! Why not the host's place in the file: a worker's counter block outlives its
//! generation (a reload switches a slot between two blocks, and counters only grow), so
//! a row read under the names of a later configuration would give one host's responses
//! to another. A row is never given to another name; a removed host keeps its row and its
//! series. Rows are [`HOSTS_COUNTED`]: once every row has had a name, a host with a new
//! name is not counted by host (its responses are in the `host=""` rest). Cold: runs at
//! start and at each reload only; nothing here is on a request's path.

use super::VHost;
use crate::site::hosts::HOSTS_COUNTED;

/// A host's `row` when every row is taken: counted in no row.
pub(crate) const UNCOUNTED: u16 = u16::MAX;

/// The name of each row, in row order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct HostRows {
    names: Vec<Box<str>>,
}

impl HostRows {
    /// Gives each of `hosts` the row its name had, or the next free one.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn assign(&mut self, hosts: &mut [VHost]) {
        for h in hosts {
            let known = self.names.iter().position(|n| *n == h.name);
            let row = match known {
                Some(row) => Some(row),
                None if self.names.len() < HOSTS_COUNTED => {
                    self.names.push(h.name.clone());
                    Some(self.names.len() - 1)
                }
                None => None,
            };
            h.row = row.map_or(UNCOUNTED, |r| r as u16);
        }
    }

    /// Every row's name, row 0 first.
    pub(crate) fn names(&self) -> &[Box<str>] {
        &self.names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(names: &[&str]) -> Vec<VHost> {
        let one = |n: &&str| VHost {
            name: (*n).into(),
            root: ".".into(),
            site: Default::default(),
            row: UNCOUNTED,
        };
        names.iter().map(one).collect()
    }

    fn rows(h: &[VHost]) -> Vec<u16> {
        h.iter().map(|h| h.row).collect()
    }

    #[test]
    fn a_name_keeps_its_row_through_reorders_additions_and_removals() {
        let mut r = HostRows::default();
        let mut first = hosts(&["a.test", "b.test", "*"]);
        r.assign(&mut first);
        assert_eq!(rows(&first), [0, 1, 2]);
        let mut second = hosts(&["*", "c.test", "a.test"]);
        r.assign(&mut second);
        assert_eq!(rows(&second), [2, 3, 0], "b's row stays b's");
        let names: Vec<&str> = r.names().iter().map(|n| &**n).collect();
        assert_eq!(names, ["a.test", "b.test", "*", "c.test"]);
    }

    #[test]
    fn past_the_last_row_a_new_name_is_not_counted() {
        let mut r = HostRows::default();
        let many: Vec<String> = (0..HOSTS_COUNTED).map(|i| format!("h{i}.test")).collect();
        let mut all = hosts(&many.iter().map(String::as_str).collect::<Vec<_>>());
        r.assign(&mut all);
        let mut next = hosts(&["new.test", "h3.test"]);
        r.assign(&mut next);
        assert_eq!(rows(&next), [UNCOUNTED, 3]);
    }
}
