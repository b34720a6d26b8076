//! Fuzz target `topology`: any bytes as the text of the kernel files steerd's topology
//! stage reads. The first byte picks the parser; the rest is the file.
//!
//! Never panics. What parses is consistent: a cpulist prints back to text that parses to
//! the same set, a distance row is never empty, a quota's worker cap is at least 1.

use steerd::cpuset::CpuSet;
use steerd::topology::parse;

/// The properties above, for one input (the fuzz target and tests/code/fuzz_seeds.rs call it).
pub(super) fn holds(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    match which % 10 {
        0 => {
            if let Ok(set) = CpuSet::parse_list(&text) {
                assert_eq!(CpuSet::parse_list(&set.to_string()), Ok(set));
            }
        }
        1 => {
            if let Ok(set) = CpuSet::parse_mask(&text) {
                assert_eq!(CpuSet::parse_list(&set.to_string()), Ok(set));
            }
        }
        2 => {
            let _ = parse::parse_id(&text);
            if let Ok(row) = parse::parse_distance_row(&text) {
                assert!(!row.is_empty());
            }
        }
        3 => {
            if let Ok(Some(q)) = parse::parse_cpu_max(&text) {
                assert!(q.worker_cap() >= 1);
            }
        }
        4 => {
            let (quota, period) = text.split_once('\n').unwrap_or((&text, "100000"));
            if let Ok(Some(q)) = parse::parse_cfs(quota, period) {
                assert!(q.worker_cap() >= 1);
            }
        }
        5 => {
            let _ = parse::parse_status_allowed(&text);
        }
        6 => {
            for line in parse::parse_proc_cgroup(&text) {
                assert!(line.path.starts_with('/'));
            }
        }
        7 => {
            let _ = parse::parse_cgroup_mounts(&text);
        }
        8 => {
            let _ = parse::parse_routes(&text);
            let _ = parse::parse_if_inet6(&text);
        }
        _ => {
            let _ = parse::parse_interrupts_for(&text, &["eth0", "virtio2"]);
        }
    }
}
