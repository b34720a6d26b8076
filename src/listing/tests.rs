//! A listing produced from a real directory, piece by piece, under every budget and
//! arena size: the same JSON and the same chunk framing whatever the turns.

use super::*;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Mode, OFlags};

struct Tree {
    base: std::path::PathBuf,
    root: OwnedFd,
}

impl Tree {
    fn new(name: &str, files: usize) -> Tree {
        let base =
            std::env::temp_dir().join(format!("steerd-listing-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let d = base.join("root/d");
        std::fs::create_dir_all(d.join("sub")).unwrap();
        std::fs::create_dir_all(d.join("Zed")).unwrap();
        std::fs::create_dir_all(d.join(".git")).unwrap();
        std::fs::write(d.join(".env"), "x").unwrap();
        for i in 0..files {
            std::fs::write(d.join(format!("f{i:04}")), vec![b'x'; i]).unwrap();
        }
        let root = rustix::fs::open(
            base.join("root"),
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        Tree { base, root }
    }

    fn dir(&self) -> OwnedFd {
        let mut s = [0u8; PATH_MAX + 1];
        crate::files::dir::open_dir(self.root.as_fd(), b"/d/", &mut s, Dotfiles::Deny)
            .unwrap()
            .0
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// The whole body of one listing, filled with `work` a turn; also the turns it took.
fn body(l: &mut Listings, t: &Tree, spec: &Spec<'_>, work: u32) -> (Vec<u8>, usize) {
    let index = l.acquire(spec).expect("a free slot");
    let dir = t.dir();
    let (mut out, mut turns) = (Vec::new(), 1);
    let mut left = work;
    loop {
        match l.fill(index, dir.as_fd(), t.root.as_fd(), &mut left) {
            Fill::Bytes { at, end, last } => {
                assert!(end - at <= OUT_CAP);
                out.extend_from_slice(&l.bytes(index)[at..end]);
                if last {
                    break;
                }
            }
            Fill::Later => {
                turns += 1;
                left = work;
            }
            Fill::Failed => panic!("failed"),
        }
    }
    l.release(index);
    (out, turns)
}

/// Chunked transfer coding decoded (RFC 9112 §7.1), strictly.
fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line = b.iter().position(|&c| c == b'\r').expect("size line");
        let size = usize::from_str_radix(std::str::from_utf8(&b[..line]).unwrap(), 16).unwrap();
        assert_eq!(&b[line..line + 2], b"\r\n");
        b = &b[line + 2..];
        if size == 0 {
            assert_eq!(b, b"\r\n", "nothing after the last chunk");
            return out;
        }
        out.extend_from_slice(&b[..size]);
        assert_eq!(&b[size..size + 2], b"\r\n");
        b = &b[size + 2..];
    }
}

fn json_spec(chunked: bool) -> Spec<'static> {
    Spec {
        path: b"/d/",
        format: Format::Json,
        chunked,
        dotfiles: Dotfiles::Deny,
    }
}

fn names(json: &[u8]) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_slice(json).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_budget_and_arena_gives_the_same_sorted_listing() {
    let t = Tree::new("same", 300);
    let mut want: Vec<String> = vec!["sub".into(), "Zed".into()];
    want.extend((0..300).map(|i| format!("f{i:04}")));
    let mut pieces = Vec::new();
    for (names_cap, entries) in [(0, 2), (600, 7), (BATCH_NAMES, BATCH_ENTRIES)] {
        let mut l = Listings::with_arena(1, names_cap, entries);
        for work in [EMIT_COST, READ_COST, WORK_BUDGET, u32::MAX] {
            let (raw, turns) = body(&mut l, &t, &json_spec(true), work);
            let json = dechunk(&raw);
            assert_eq!(
                names(&json),
                want,
                "arena {names_cap}/{entries}, work {work}"
            );
            if work == READ_COST && entries == 2 {
                assert!(
                    turns > 300 / 2,
                    "a pass per two entries, a turn per pass: {turns}"
                );
            }
            pieces.push(json);
        }
    }
    assert!(pieces.windows(2).all(|w| w[0] == w[1]), "byte for byte");
    let mut l = Listings::new(1);
    let (plain, _) = body(&mut l, &t, &json_spec(false), WORK_BUDGET);
    assert_eq!(
        plain, pieces[0],
        "close-delimited: the same bytes, unframed"
    );
}

#[test]
fn html_lists_the_same_entries_with_links() {
    let t = Tree::new("html", 3);
    let mut l = Listings::new(1);
    let spec = Spec {
        format: Format::Html,
        ..json_spec(true)
    };
    let page = String::from_utf8(dechunk(&body(&mut l, &t, &spec, WORK_BUDGET).0)).unwrap();
    let hrefs: Vec<&str> = page
        .split("href=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
        .collect();
    assert_eq!(hrefs, ["../", "sub/", "Zed/", "f0000", "f0001", "f0002"]);
    assert!(page.ends_with("</html>\n"));
    assert!(
        !page.contains(".env") && !page.contains(".git"),
        "dotfiles are not listed"
    );
    let allow = Spec {
        dotfiles: Dotfiles::Allow,
        ..spec
    };
    let page = String::from_utf8(dechunk(&body(&mut l, &t, &allow, WORK_BUDGET).0)).unwrap();
    assert!(page.contains("href=\".git/\"") && page.contains("href=\".env\""));
}

#[test]
fn slots_are_taken_and_given_back() {
    let mut l = Listings::new(2);
    let spec = json_spec(true);
    let a = l.acquire(&spec).unwrap();
    let b = l.acquire(&spec).unwrap();
    assert_ne!(a, b);
    assert_eq!(l.acquire(&spec), None, "every slot taken");
    assert_eq!(l.in_use(), 2);
    l.release(a);
    assert_eq!(l.acquire(&spec), Some(a));
    let t = Tree::new("slots", 0);
    let mut none = Listings::new(0);
    assert_eq!(none.acquire(&spec), None);
    let dir = t.dir();
    assert_eq!(
        none.fill(0, dir.as_fd(), t.root.as_fd(), &mut 100),
        Fill::Failed
    );
    l.release(b);
    assert_eq!(
        l.fill(b, dir.as_fd(), t.root.as_fd(), &mut 100),
        Fill::Failed,
        "not taken"
    );
}

#[test]
fn entries_removed_mid_listing_are_left_out() {
    let t = Tree::new("vanish", 50);
    let mut l = Listings::with_arena(1, 0, 4);
    let index = l.acquire(&json_spec(false)).unwrap();
    let dir = t.dir();
    let mut out = Vec::new();
    let mut removed = false;
    loop {
        let mut work = READ_COST + 2 * EMIT_COST;
        match l.fill(index, dir.as_fd(), t.root.as_fd(), &mut work) {
            Fill::Bytes { at, end, last } => {
                out.extend_from_slice(&l.bytes(index)[at..end]);
                if !removed {
                    for i in 10..50 {
                        std::fs::remove_file(t.base.join(format!("root/d/f{i:04}"))).unwrap();
                    }
                    removed = true;
                }
                if last {
                    break;
                }
            }
            Fill::Later => {}
            Fill::Failed => panic!("failed"),
        }
    }
    let got = names(&out);
    assert!(got.len() >= 12 && got.len() < 52, "{got:?}");
    assert!(got.windows(2).all(|w| w[0] != w[1]));
}
