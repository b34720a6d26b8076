//! Which row of a per-name counter table each name counts into, kept by name for the
//! life of the master: the per-host response counters (by host name) and the forwarded
//! requests by upstream (by UPSTREAM as written), so that a reload which reorders, adds or
//! removes host blocks or `--proxy` rules leaves every count with the name it was counted
//! under.
//!
//! Input: the hosts and the rules of the configuration at start and of each reload.
//! Output: each host's `row` and each forwarding rule's `counted`, set in place, and the
//! name of every row for `/metrics`.
//! Why not the place in the file: a worker's counter block outlives its generation (a
//! reload switches a slot between two blocks, and counters only grow), so a row read
//! under the names of a later configuration would give one name's counts to another. A
//! row is never given to another name; a name no longer configured keeps its row and its
//! series. A table has a fixed number of rows ([`HOSTS_COUNTED`],
//! [`UPSTREAMS_COUNTED`]): once every row has had a name, a new name is not counted apart
//! (a host's responses are in the `host=""` rest; an upstream's are not counted by
//! upstream). Cold: runs at start and at each reload only; nothing here is on a
//! request's path.

use super::VHost;
use crate::site::hosts::HOSTS_COUNTED;
use crate::site::upstream::UPSTREAMS_COUNTED;

/// A host's `row` when every row is taken: counted in no row.
pub(crate) const UNCOUNTED: u16 = u16::MAX;

/// The name of each row, in row order, and how many rows the table has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Rows {
    names: Vec<Box<str>>,
    rows: usize,
}

impl Rows {
    /// The rows of the per-host response counters.
    pub(crate) fn of_hosts() -> Rows {
        Rows {
            names: Vec::new(),
            rows: HOSTS_COUNTED,
        }
    }

    /// The rows of the forwarded requests by upstream.
    pub(crate) fn of_upstreams() -> Rows {
        Rows {
            names: Vec::new(),
            rows: UPSTREAMS_COUNTED,
        }
    }

    /// The row `name` had, or the next free one; `None` when every row has another name.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn row_of(&mut self, name: &str) -> Option<usize> {
        match self.names.iter().position(|n| **n == *name) {
            Some(row) => Some(row),
            None if self.names.len() < self.rows => {
                self.names.push(name.into());
                Some(self.names.len() - 1)
            }
            None => None,
        }
    }

    /// Gives each of `hosts` the row its name had, or the next free one.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    pub(crate) fn assign(&mut self, hosts: &mut [VHost]) {
        for h in hosts {
            h.row = self.row_of(&h.name).map_or(UNCOUNTED, |r| r as u16);
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
        let mut r = Rows::of_hosts();
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
        let mut r = Rows::of_hosts();
        let many: Vec<String> = (0..HOSTS_COUNTED).map(|i| format!("h{i}.test")).collect();
        let mut all = hosts(&many.iter().map(String::as_str).collect::<Vec<_>>());
        r.assign(&mut all);
        let mut next = hosts(&["new.test", "h3.test"]);
        r.assign(&mut next);
        assert_eq!(rows(&next), [UNCOUNTED, 3]);
    }

    #[test]
    fn upstream_rows_are_kept_by_name_and_bounded() {
        let mut r = Rows::of_upstreams();
        assert_eq!(r.row_of("unix:/a.sock"), Some(0));
        assert_eq!(r.row_of("http://127.0.0.1:9000"), Some(1));
        assert_eq!(r.row_of("unix:/a.sock"), Some(0));
        for i in 2..UPSTREAMS_COUNTED {
            assert_eq!(r.row_of(&format!("unix:/{i}.sock")), Some(i));
        }
        assert_eq!(r.row_of("unix:/one-more.sock"), None);
        assert_eq!(r.row_of("http://127.0.0.1:9000"), Some(1));
    }
}
