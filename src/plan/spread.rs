//! The spread order behind `--workers N`, in O(n log n) instead of a scan per pick.
//!
//! Input: the CPU pool and the topology. Output: every pool CPU once, in the order the
//! greedy rule of [`super::spread_order`] takes them. It does not decide the rule.
//!
//! Design. The rule takes, each step, the CPU with the least
//! `(node count, off the NIC's node, LLC count, cluster count, core count, id)`, where a
//! count is how many CPUs already taken share that group. Scanning every CPU per step is
//! quadratic (8192 CPUs: minutes). The minimum of such a lexicographic key decomposes:
//! over the CPUs of one node the first two parts are equal, so the node's best CPU is the
//! best of its LLC groups by `(LLC count, ...)`, and so on down to the core, whose best
//! CPU is its lowest untaken id. So the CPUs form a tree node → LLC → cluster → core
//! (each entry named by its whole key path, so it stays a tree even when the kernel's
//! groups do not nest), every entry keeps its children ordered by their best score, and
//! a pick walks down the first children. Taking a CPU raises four counts; only the
//! entries with those group keys (one per level when the groups nest) and their
//! ancestors are re-scored: O(log n) each.

use crate::cpuset::{CpuId, CpuSet};
use crate::topology::Topology;
use std::collections::{BTreeSet, HashMap, VecDeque};

/// A suffix of the rule's key, left-aligned: an entry at level `l` holds its own count
/// (and, for a node, the off-NIC flag) followed by its best child's score.
type Score = [u32; 6];

/// Node, LLC, cluster, core.
const LEVELS: usize = 4;

struct Entry {
    level: usize,
    /// The group key at this level (`group_keys`' value).
    key: u32,
    parent: Option<usize>,
    /// Children by their current score (internal entries).
    children: BTreeSet<(Score, usize)>,
    /// Untaken CPUs, ascending (core entries).
    cpus: VecDeque<CpuId>,
    /// The score the parent (or the root) holds for this entry; `None` when empty.
    score: Option<Score>,
}

struct SpreadTree {
    entries: Vec<Entry>,
    root: BTreeSet<(Score, usize)>,
    /// Taken CPUs per group key, per level.
    counts: [HashMap<u32, u32>; LEVELS],
    /// Every entry with a given (level, key): the ones a count change re-scores.
    by_key: HashMap<(usize, u32), Vec<usize>>,
    nic_node: Option<u32>,
}

/// Every CPU of `pool` in spread order (see the module doc).
pub(super) fn order(pool: &CpuSet, topo: &Topology) -> Vec<CpuId> {
    let mut tree = SpreadTree::build(pool, topo);
    let mut out = Vec::with_capacity(pool.len());
    while let Some(cpu) = tree.take() {
        out.push(cpu);
    }
    out
}

impl SpreadTree {
    fn build(pool: &CpuSet, topo: &Topology) -> SpreadTree {
        let mut t = SpreadTree {
            entries: Vec::new(),
            root: BTreeSet::new(),
            counts: Default::default(),
            by_key: HashMap::new(),
            nic_node: topo.nic.as_ref().and_then(|n| n.node).map(|n| n.0),
        };
        let mut path_index: HashMap<(usize, [u32; LEVELS]), usize> = HashMap::new();
        for cpu in pool.iter() {
            let keys = super::group_keys(cpu, topo);
            let mut parent = None;
            for level in 0..LEVELS {
                let mut path = [0; LEVELS];
                path[..=level].copy_from_slice(&keys[..=level]);
                let e = *path_index
                    .entry((level, path))
                    .or_insert_with(|| t.add(level, keys[level], parent));
                parent = Some(e);
            }
            if let Some(core) = parent {
                t.entries[core].cpus.push_back(cpu);
            }
        }
        for level in (0..LEVELS).rev() {
            for e in 0..t.entries.len() {
                if t.entries[e].level == level {
                    t.refresh(e);
                }
            }
        }
        t
    }

    fn add(&mut self, level: usize, key: u32, parent: Option<usize>) -> usize {
        let id = self.entries.len();
        self.entries.push(Entry {
            level,
            key,
            parent,
            children: BTreeSet::new(),
            cpus: VecDeque::new(),
            score: None,
        });
        self.by_key.entry((level, key)).or_default().push(id);
        id
    }

    /// Takes the best CPU, raises its groups' counts and re-scores what they touch.
    fn take(&mut self) -> Option<CpuId> {
        let &(_, mut e) = self.root.first()?;
        while self.entries[e].level + 1 < LEVELS {
            e = self.entries[e].children.first()?.1;
        }
        let cpu = self.entries[e].cpus.pop_front()?;
        let mut dirty: [Vec<usize>; LEVELS] = Default::default();
        let mut at = Some(e);
        while let Some(a) = at {
            let (level, key) = (self.entries[a].level, self.entries[a].key);
            *self.counts[level].entry(key).or_insert(0) += 1;
            dirty[level].extend(self.by_key.get(&(level, key)).into_iter().flatten());
            at = self.entries[a].parent;
        }
        for level in (0..LEVELS).rev() {
            let mut now = std::mem::take(&mut dirty[level]);
            now.sort_unstable();
            now.dedup();
            for e in now {
                self.refresh(e);
                if let Some(p) = self.entries[e].parent {
                    dirty[level - 1].push(p);
                }
            }
        }
        Some(cpu)
    }

    /// Recomputes `e`'s score from its count and best child, and moves it in its
    /// parent's (or the root's) ordered set.
    #[cfg_attr(feature = "cold-size", optimize(size))]
    fn refresh(&mut self, e: usize) {
        let entry = &self.entries[e];
        let best: Option<Score> = if entry.level + 1 == LEVELS {
            entry.cpus.front().map(|c| {
                let mut s = [0; 6];
                s[0] = c.get() as u32;
                s
            })
        } else {
            entry.children.first().map(|(s, _)| *s)
        };
        let count = self.counts[entry.level]
            .get(&entry.key)
            .copied()
            .unwrap_or(0);
        let new = best.map(|child| {
            let mut s = [0; 6];
            s[0] = count;
            let mut from = 1;
            if entry.level == 0 {
                s[1] = u32::from(self.nic_node.is_some_and(|n| n != entry.key));
                from = 2;
            }
            s[from..].copy_from_slice(&child[..6 - from]);
            s
        });
        let old = entry.score;
        let parent = entry.parent;
        if old == new {
            return;
        }
        let set = match parent {
            Some(p) => &mut self.entries[p].children,
            None => &mut self.root,
        };
        if let Some(old) = old {
            set.remove(&(old, e));
        }
        if let Some(new) = new {
            set.insert((new, e));
        }
        self.entries[e].score = new;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology;
    use std::path::PathBuf;

    /// The rule as first written: scan every untaken CPU for the least key, each step.
    fn naive(pool: &CpuSet, topo: &Topology) -> Vec<CpuId> {
        let nic_node = topo.nic.as_ref().and_then(|n| n.node);
        let ids: Vec<CpuId> = pool.iter().collect();
        let keys: Vec<[u32; 5]> = ids
            .iter()
            .map(|&c| super::super::group_keys(c, topo))
            .collect();
        let mut counts: [HashMap<u32, u32>; LEVELS] = Default::default();
        let mut taken = vec![false; ids.len()];
        let mut order = Vec::new();
        while let Some(best) = (0..ids.len()).filter(|&i| !taken[i]).min_by_key(|&i| {
            let k = &keys[i];
            let n = |l: usize| counts[l].get(&k[l]).copied().unwrap_or(0);
            (
                n(0),
                nic_node.is_some_and(|nn| nn.0 != k[0]),
                n(1),
                n(2),
                n(3),
                ids[i],
            )
        }) {
            taken[best] = true;
            for (l, count) in counts.iter_mut().enumerate() {
                *count.entry(keys[best][l]).or_insert(0) += 1;
            }
            order.push(ids[best]);
        }
        order
    }

    fn fixture(name: &str) -> Topology {
        let sysfs = fixtures_dir().join(name);
        topology::read(&sysfs, "/proc".as_ref()).0
    }

    fn fixtures_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/sys")
    }

    /// Every captured sysfs tree (not the `NAME.proc` twins), read from the directory so
    /// a new fixture is one new folder.
    fn fixture_names() -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
            .expect("tests/data/sys")
            .map(|e| e.expect("fixture").path())
            .filter(|p| p.is_dir() && p.extension().is_none_or(|e| e != "proc"))
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert!(names.len() >= 10, "fixtures went missing: {names:?}");
        names
    }

    #[test]
    fn the_tree_takes_cpus_in_the_naive_order_on_every_fixture() {
        for name in fixture_names() {
            let mut t = fixture(&name);
            for nic in [None, Some(1)] {
                t.nic = nic.map(|node| crate::topology::Nic {
                    interface: "eth0".into(),
                    node: Some(topology::NodeId(node)),
                    local_cpus: None,
                    rps_cpus: CpuSet::new(),
                    irq_cpus: CpuSet::new(),
                });
                assert_eq!(
                    order(&t.allowed, &t),
                    naive(&t.allowed, &t),
                    "{name} nic {nic:?}"
                );
                // A pool with holes (every third CPU gone).
                let holes = CpuSet::from_ids(t.allowed.iter().filter(|c| c.get() % 3 != 1));
                assert_eq!(order(&holes, &t), naive(&holes, &t), "{name} holes");
            }
        }
    }
}
