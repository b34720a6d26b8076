//! The keep-alive pool of upstream connections through the real binary: sequential
//! requests share one connection (unix socket and loopback port), an upstream's
//! `Connection: close` is obeyed, a connection the upstream closed is retried once for a
//! GET and never replayed for a POST, an idle connection the upstream closes is dropped
//! at once, and the idle connections to one upstream are bounded.

use crate::support;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::client::*;
use support::server::{Server, TempDir};
use support::upstream::{Answer, Listen, Seen, Upstream};

/// Idle connections steerd keeps to one upstream (`relay/pool.rs`).
const PER_UPSTREAM: usize = 32;

/// One worker (one pool) with `index.html` served as a file and `/api/**` forwarded.
fn in_front(tag: &str, up: &Upstream) -> (TempDir, Server) {
    let dir = TempDir::new(tag);
    dir.write_all(&[("index.html", "home\n")]);
    let rule = format!("/api/** {}", up.spec());
    let srv = serve(dir.path(), &["--workers", "1", "--proxy", rule.as_str()]);
    (dir, srv)
}

fn serve(root: &Path, args: &[&str]) -> Server {
    Server::start_in(root, args, &[])
}

fn ok(_: &Seen) -> Answer {
    Answer::Fixed(200, vec![], b"fine\n".to_vec())
}

/// Waits (bounded) until `done` holds; whether it did.
fn within(limit: Duration, done: impl Fn() -> bool) -> bool {
    let began = Instant::now();
    while !done() {
        if began.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

fn post(srv: &Server, target: &str, body: &str) -> Response {
    let len = body.len();
    let head = format!("POST {target} HTTP/1.1\r\nHost: t\r\nContent-Length: {len}\r\n");
    exchange(srv.addr, &format!("{head}Connection: close\r\n\r\n{body}"))
}

fn count(up: &Upstream, line: &[u8]) -> usize {
    up.seen()
        .iter()
        .filter(|s| s.request_line() == line)
        .count()
}

#[test]
fn sequential_requests_reuse_one_upstream_connection() {
    for listen in [Listen::Unix, Listen::Tcp] {
        let up = Upstream::start(listen, ok);
        let (_dir, srv) = in_front("pool-reuse", &up);
        for i in 0..5 {
            let r = get(srv.addr, &format!("/api/{i}"), "");
            assert_eq!((r.status, r.text().as_str()), (200, "fine\n"), "{listen:?}");
        }
        assert_eq!(up.seen().len(), 5, "{listen:?}");
        assert_eq!(
            up.connections(),
            1,
            "{listen:?}: one connection for all five"
        );
    }
}

#[test]
fn an_upstream_connection_close_is_not_reused() {
    fn answer(seen: &Seen) -> Answer {
        match seen.target().starts_with("/api/close") {
            true => Answer::Fixed(200, vec!["Connection: close".into()], b"bye\n".to_vec()),
            false => ok(seen),
        }
    }
    let up = Upstream::start(Listen::Unix, answer);
    let (_dir, srv) = in_front("pool-close", &up);
    for _ in 0..3 {
        assert_eq!(get(srv.addr, "/api/close", "").text(), "bye\n");
    }
    assert_eq!(
        up.connections(),
        3,
        "a connection the upstream closes is not reused"
    );
    for _ in 0..3 {
        assert_eq!(get(srv.addr, "/api/keep", "").text(), "fine\n");
    }
    assert_eq!(up.connections(), 4, "the others share one");
}

#[test]
fn a_get_on_a_connection_the_upstream_dropped_is_retried_once() {
    for listen in [Listen::Unix, Listen::Tcp] {
        let up = Upstream::start(listen, |s| Answer::FirstOnly(Box::new(ok(s))));
        let (_dir, srv) = in_front("pool-retry", &up);
        assert_eq!(get(srv.addr, "/api/one", "").status, 200);
        let r = get(srv.addr, "/api/two", "");
        assert_eq!((r.status, r.text().as_str()), (200, "fine\n"), "{listen:?}");
        assert_eq!(
            count(&up, b"GET /api/two HTTP/1.1"),
            2,
            "{listen:?}: sent on the pooled connection, then once more on a fresh one"
        );
        assert_eq!(up.connections(), 2, "{listen:?}");
    }
}

#[test]
fn a_post_on_a_connection_the_upstream_dropped_is_not_replayed() {
    let up = Upstream::start(Listen::Unix, |_| Answer::FirstOnly(Box::new(Answer::Echo)));
    let (_dir, srv) = in_front("pool-post", &up);
    assert_eq!(get(srv.addr, "/api/one", "").status, 200);
    let r = post(&srv, "/api/order", "item1");
    assert_eq!(r.status, 502, "a POST is not sent twice");
    assert_eq!(count(&up, b"POST /api/order HTTP/1.1"), 1);
    assert_eq!(up.connections(), 1);
    let r = get(srv.addr, "/api/three", "");
    assert_eq!(r.status, 200, "the next request goes on a fresh connection");
    assert_eq!(
        count(&up, b"POST /api/order HTTP/1.1"),
        1,
        "and the POST stays once"
    );
}

#[test]
fn an_idle_connection_the_upstream_closes_is_dropped_at_once() {
    let up = Upstream::start(Listen::Unix, |_| Answer::ThenClose(Box::new(Answer::Echo)));
    let (_dir, srv) = in_front("pool-idle-close", &up);
    for i in 0..3 {
        assert_eq!(get(srv.addr, &format!("/api/{i}"), "").status, 200);
        assert!(
            within(Duration::from_secs(10), || up.open() == 0),
            "the upstream closed its side"
        );
        // A POST is never retried: it succeeds only on a connection that is open.
        let r = post(&srv, "/api/post", "hi");
        assert_eq!(r.status, 200, "round {i}: the closed one was not taken");
    }
    assert_eq!(count(&up, b"POST /api/post HTTP/1.1"), 3);
}

/// Requests arrived at the bounded-pool test's upstream.
static ARRIVED: AtomicUsize = AtomicUsize::new(0);
/// Requests the bounded-pool test sends at once.
const AT_ONCE: usize = PER_UPSTREAM + 4;

#[test]
fn idle_connections_to_one_upstream_are_bounded() {
    /// Answers once `AT_ONCE` requests are in: that many connections at once.
    fn gathered(seen: &Seen) -> Answer {
        ARRIVED.fetch_add(1, Ordering::SeqCst);
        within(Duration::from_secs(20), || {
            ARRIVED.load(Ordering::SeqCst) >= AT_ONCE
        });
        ok(seen)
    }
    let up = Upstream::start(Listen::Unix, gathered);
    let (_dir, srv) = in_front("pool-bound", &up);
    let addr = srv.addr;
    let clients: Vec<_> = (0..AT_ONCE)
        .map(|i| std::thread::spawn(move || get(addr, &format!("/api/{i}"), "").status))
        .collect();
    for c in clients {
        assert_eq!(c.join().unwrap(), 200);
    }
    assert_eq!(up.connections(), AT_ONCE, "all in flight at once");
    // Past the bound, steerd closes; the rest stay open, idle (until their timeout).
    assert!(
        within(Duration::from_secs(10), || up.open() <= PER_UPSTREAM),
        "{} open",
        up.open()
    );
    assert_eq!(up.open(), PER_UPSTREAM, "the pool keeps its bound");
    assert_eq!(get(srv.addr, "/api/again", "").status, 200);
    assert_eq!(
        up.connections(),
        AT_ONCE,
        "and the next request takes one of them"
    );
}
