//! What monitors expect of `/metrics`, through the real binary: `promtool check metrics`
//! (the Prometheus project's own linter) finds no problem in a live scrape (with a
//! `--proxy` rule, so the counts by upstream are in it);
//! `steerd_build_info` and the `process_*` figures are there for the master and every
//! worker and move with the process (open descriptors follow held connections); the
//! response-time histogram counts every response finished, in cumulative buckets, and a
//! response held up by a client that does not read lands above the buckets a fast one
//! fills.

use crate::support;

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::server::*;
use support::skip::skip_or_fail;

const HISTOGRAM: &str = "steerd_response_duration_seconds";

/// The `le` bounds served, in order.
const LE: [&str; 12] = [
    "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf",
];

fn scrape(server: &Server) -> String {
    let (status, body) = get(server.metrics.expect("--metrics"), "/metrics");
    assert_eq!(status, 200, "{body}");
    body
}

fn samples(server: &Server) -> HashMap<String, f64> {
    parse_samples(&scrape(server)).into_iter().collect()
}

fn labels(index: usize, cpu: usize) -> String {
    format!("worker=\"{index}\",cpu=\"{cpu}\",node=\"0\"")
}

#[test]
fn promtool_finds_no_problem_in_a_live_scrape() {
    let name = "promtool_finds_no_problem_in_a_live_scrape";
    if Command::new("promtool").arg("--version").output().is_err() {
        return skip_or_fail(name, "no promtool on PATH (Debian package `prometheus`)");
    }
    // A proxy rule to a socket nothing listens at: the family by upstream is linted too.
    let nowhere = TempDir::new("promtool-upstream");
    let rule = format!(
        "/api/** unix:{}",
        nowhere.path().join("none.sock").display()
    );
    let server = Server::start(&["--proxy", &rule]);
    server.wait_healthy();
    for path in ["/index.html", "/index.html", "/no-such-file", "/api/x"] {
        get(server.addr, path);
    }
    let body = scrape(&server);
    assert!(body.contains(&format!("{HISTOGRAM}_bucket{{")), "{body}");
    assert!(body.contains("steerd_proxy_responses_total{"), "{body}");
    assert!(body.contains("process_open_fds{"), "{body}");
    promtool_accepts(&body);
}

/// `promtool check metrics` says nothing about `body`.
fn promtool_accepts(body: &str) {
    let mut check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    check
        .stdin
        .take()
        .expect("stdin")
        .write_all(body.as_bytes())
        .expect("write to promtool");
    let out = check.wait_with_output().expect("promtool output");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics: {}\n{said}\non:\n{body}",
        out.status
    );
}

#[test]
fn promtool_accepts_the_host_labels_of_the_response_counters() {
    let name = "promtool_accepts_the_host_labels_of_the_response_counters";
    if Command::new("promtool").arg("--version").output().is_err() {
        return skip_or_fail(name, "no promtool on PATH (Debian package `prometheus`)");
    }
    let root = TempDir::new("metrics-hosts");
    root.write_all(&[("index.html", "hi\n")]);
    let a = format!("a.test={}", root.path().display());
    let server = Server::start(&["--workers", "1", "--host", &a]);
    server.wait_healthy();
    let ask = |host: &str| {
        let mut s = TcpStream::connect(server.addr).unwrap();
        write!(
            s,
            "GET /index.html HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text
    };
    assert!(ask("a.test").starts_with("HTTP/1.1 200"));
    assert!(ask("A.test:80").starts_with("HTTP/1.1 200"));
    assert!(ask("b.test").starts_with("HTTP/1.1 421"));
    let l = labels(0, server.plan()[0].1);
    let m = samples(&server);
    let series = |class: &str, host: &str| {
        m.get(&format!(
            "steerd_responses_total{{{l},class=\"{class}\",host=\"{host}\"}}"
        ))
        .copied()
    };
    assert_eq!(series("2xx", "a.test"), Some(2.0), "{m:?}");
    assert_eq!(series("4xx", ""), Some(1.0), "the 421, no host's");
    assert_eq!(series("4xx", "a.test"), Some(0.0));
    promtool_accepts(&scrape(&server));
}

#[test]
fn build_info_and_process_figures_for_the_master_and_every_worker() {
    let now = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    let before = now();
    let server = Server::start(&[]);
    server.wait_healthy();
    let m = samples(&server);
    let version = format!(
        "steerd_build_info{{version=\"{}\"}}",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(m.get(&version), Some(&1.0), "{version}");
    let after = now();
    let mut whose = vec!["process=\"master\"".to_string()];
    whose.extend(server.plan().iter().map(|&(i, cpu)| labels(i, cpu)));
    let fig = |m: &HashMap<String, f64>, name: &str, who: &str| -> f64 {
        let key = format!("{name}{{{who}}}");
        *m.get(&key).unwrap_or_else(|| panic!("no {key}"))
    };
    let max = fig(&m, "process_max_fds", &whose[0]);
    for who in &whose {
        // btime is whole seconds, so a start time may read up to a second early.
        let start = fig(&m, "process_start_time_seconds", who);
        assert!(
            start >= before - 2.0 && start <= after + 1.0,
            "{who}: {start}"
        );
        let open = fig(&m, "process_open_fds", who);
        assert!(open >= 3.0, "{who}: {open} open descriptors");
        assert_eq!(
            fig(&m, "process_max_fds", who),
            max,
            "{who}: inherited limit"
        );
        assert!(max > open, "{who}");
        let rss = fig(&m, "process_resident_memory_bytes", who);
        assert!(rss >= 256.0 * 1024.0, "{who}: {rss} bytes resident");
    }
    // Each connection a worker holds is a descriptor of that worker.
    const HELD: usize = 20;
    let open_now = |m: &HashMap<String, f64>| -> f64 {
        whose[1..]
            .iter()
            .map(|w| fig(m, "process_open_fds", w))
            .sum()
    };
    let idle = open_now(&m);
    // Each answered once and kept alive (a connection that sends nothing stays in the
    // kernel's queue: the listener defers the accept until a request arrives).
    let held: Vec<BufReader<TcpStream>> = (0..HELD)
        .map(|_| {
            let mut s = BufReader::new(server.connect());
            let head = "GET /index.html HTTP/1.1\r\nHost: test\r\n\r\n";
            s.get_mut().write_all(head.as_bytes()).expect("write");
            let r = support::client::read_response(&mut s, false).expect("a response");
            assert_eq!(r.status, 200);
            s
        })
        .collect();
    wait_until(
        "the workers' descriptors count the held connections",
        || open_now(&samples(&server)) >= idle + HELD as f64,
    );
    drop(held);
    wait_until("the workers' descriptors go back down", || {
        open_now(&samples(&server)) < idle + HELD as f64
    });
}

/// Per worker: the buckets in `LE` order, then `_sum` and `_count`.
fn histogram(m: &HashMap<String, f64>, index: usize, cpu: usize) -> (Vec<f64>, f64, f64) {
    let l = labels(index, cpu);
    let get = |key: String| *m.get(&key).unwrap_or_else(|| panic!("no {key}"));
    let buckets = LE
        .iter()
        .map(|le| get(format!("{HISTOGRAM}_bucket{{{l},le=\"{le}\"}}")))
        .collect();
    let sum = get(format!("{HISTOGRAM}_sum{{{l}}}"));
    (buckets, sum, get(format!("{HISTOGRAM}_count{{{l}}}")))
}

fn total_count(server: &Server) -> f64 {
    let m = samples(server);
    server
        .plan()
        .iter()
        .map(|&(i, cpu)| histogram(&m, i, cpu).2)
        .sum()
}

#[test]
fn the_response_time_histogram_counts_every_response_in_cumulative_buckets() {
    let server = Server::start(&["--send-buffer", "64k"]);
    let root = server.root.as_ref().expect("root").path().to_path_buf();
    std::fs::write(root.join("big.bin"), vec![7u8; 8 << 20]).expect("write big.bin");
    server.wait_healthy();
    assert_eq!(total_count(&server), 0.0, "no response yet");
    const N: usize = 30;
    for i in 0..N {
        let path = if i % 5 == 0 {
            "/missing"
        } else {
            "/index.html"
        };
        get(server.addr, path);
    }
    // Counted once the last byte is handed to the kernel, which may be a moment after
    // the client read it.
    wait_until("every response counted", || {
        total_count(&server) == N as f64
    });
    let m = samples(&server);
    for (index, cpu) in server.plan() {
        let (buckets, sum, count) = histogram(&m, index, cpu);
        assert!(
            buckets.windows(2).all(|w| w[0] <= w[1]),
            "worker {index}: buckets not cumulative: {buckets:?}"
        );
        assert_eq!(
            buckets[LE.len() - 1],
            count,
            "worker {index}: +Inf is the count"
        );
        assert!(
            sum >= 0.0 && sum <= count * 10.0,
            "worker {index}: sum {sum}"
        );
        let responses: f64 = ["1xx", "2xx", "3xx", "4xx", "5xx"]
            .iter()
            .map(|c| {
                let key = format!(
                    "steerd_responses_total{{{},class=\"{c}\"}}",
                    labels(index, cpu)
                );
                m[&key]
            })
            .sum();
        assert_eq!(count, responses, "worker {index}: none was cut short");
    }
    // A client that reads nothing for a while holds the response of a file larger than
    // the socket buffers: its time is at least that wait.
    const WAIT: Duration = Duration::from_millis(600);
    let mut slow = server.connect();
    slow.write_all(b"GET /big.bin HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        .expect("write");
    std::thread::sleep(WAIT);
    let mut got = Vec::new();
    slow.read_to_end(&mut got).expect("read big.bin");
    assert!(got.len() > 8 << 20, "{} bytes", got.len());
    wait_until("the slow response counted", || {
        total_count(&server) == (N + 1) as f64
    });
    let m = samples(&server);
    let (mut above, mut sum) = (0.0, 0.0);
    for (index, cpu) in server.plan() {
        let (buckets, s, count) = histogram(&m, index, cpu);
        above += count - buckets[LE.iter().position(|&le| le == "0.25").unwrap()];
        sum += s;
    }
    assert_eq!(above, 1.0, "one response took more than 0.25 s");
    assert!(sum >= 0.5, "sum {sum} s is below the client's wait");
}
