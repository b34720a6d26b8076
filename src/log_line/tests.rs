//! Lines of every format for typical and hostile requests, checked byte for byte (and
//! `json` through a JSON parser).

use super::*;
use crate::http::date::DateCache;

fn clock() -> LogClock {
    LogClock::new(&DateCache::new(1_796_084_182)) // 2026-12-01 00:16:22 UTC
}

fn record() -> Record<'static> {
    Record {
        client: Some("127.0.0.1".parse().unwrap()),
        request: RequestLine::Parsed {
            method: crate::http::Method::Get,
            target: b"/a",
            minor: 1,
        },
        status: 200,
        body_bytes: 1234,
        referer: Some(b"http://r/"),
        user_agent: Some(b"curl/8"),
        user: None,
        rule: None,
        host: None,
        upstream: None,
        upstream_us: None,
        worker: 3,
        cpu: 5,
        local: true,
        duration_us: 85,
        cut_short: false,
    }
}

fn line(format: LogFormat, rec: &Record<'_>) -> String {
    let mut buf = vec![0u8; LINE_MAX];
    let n = format_line(format, rec, &clock(), &mut buf);
    String::from_utf8(buf[..n].to_vec()).unwrap()
}

#[test]
fn combined_and_common_as_nginx_writes_them() {
    let r = record();
    assert_eq!(
        line(LogFormat::Combined, &r),
        "127.0.0.1 - - [01/Dec/2026:00:16:22 +0000] \"GET /a HTTP/1.1\" 200 1234 \"http://r/\" \"curl/8\"\n"
    );
    assert_eq!(
        line(LogFormat::Common, &r),
        "127.0.0.1 - - [01/Dec/2026:00:16:22 +0000] \"GET /a HTTP/1.1\" 200 1234\n"
    );
}

#[test]
fn absent_fields_zero_bytes_and_http_1_0() {
    let r = Record {
        client: None,
        request: RequestLine::Parsed {
            method: crate::http::Method::Head,
            target: b"/",
            minor: 0,
        },
        status: 304,
        body_bytes: 0,
        referer: None,
        user_agent: Some(b""),
        user: None,
        ..record()
    };
    assert_eq!(
        line(LogFormat::Combined, &r),
        "- - - [01/Dec/2026:00:16:22 +0000] \"HEAD / HTTP/1.0\" 304 0 \"-\" \"\"\n"
    );
}

#[test]
fn hostile_fields_are_escaped() {
    let r = Record {
        client: Some("2001:db8::7".parse().unwrap()),
        request: RequestLine::Parsed {
            method: crate::http::Method::Get,
            target: b"/caf\xc3\xa9?q=\"x\"",
            minor: 1,
        },
        user_agent: Some(b"Mozilla \"quoted\" back\\slash \xe2\x82\xac\n[forged]"),
        user: None,
        ..record()
    };
    assert_eq!(
        line(LogFormat::Combined, &r),
        "2001:db8::7 - - [01/Dec/2026:00:16:22 +0000] \"GET /caf\\xC3\\xA9?q=\\\"x\\\" HTTP/1.1\" \
         200 1234 \"http://r/\" \"Mozilla \\\"quoted\\\" back\\\\slash \\xE2\\x82\\xAC\\x0A[forged]\"\n"
    );
}

#[test]
fn unparsed_requests_show_their_raw_line() {
    let raw = Record {
        request: RequestLine::Raw(b"\x16\x03\x01 junk"),
        status: 400,
        body_bytes: 0,
        referer: None,
        user_agent: None,
        user: None,
        ..record()
    };
    assert_eq!(
        line(LogFormat::Combined, &raw),
        "127.0.0.1 - - [01/Dec/2026:00:16:22 +0000] \"\\x16\\x03\\x01 junk\" 400 0 \"-\" \"-\"\n"
    );
    let empty = Record {
        request: RequestLine::Raw(b""),
        ..raw
    };
    assert!(line(LogFormat::Common, &empty).contains("] \"-\" 400 0\n"));
}

#[test]
fn json_has_every_key_in_order() {
    let text = line(LogFormat::Json, &record());
    assert_eq!(
        text,
        "{\"time\":\"2026-12-01T00:16:22Z\",\"client\":\"127.0.0.1\",\"request\":\"GET /a HTTP/1.1\",\
         \"status\":200,\"body_bytes\":1234,\"referer\":\"http://r/\",\"user_agent\":\"curl/8\",\
         \"worker\":3,\"cpu\":5,\"local\":true,\"duration_us\":85,\"cut_short\":false,\
         \"user\":null}\n"
    );
    let cut = Record {
        client: None,
        referer: None,
        user_agent: Some(b"a\"b\\\xff"),
        user: None,
        local: false,
        cut_short: true,
        ..record()
    };
    let v: serde_json::Value = serde_json::from_str(&line(LogFormat::Json, &cut)).unwrap();
    assert_eq!(v["client"], serde_json::Value::Null);
    assert_eq!(v["referer"], serde_json::Value::Null);
    assert_eq!(v["user_agent"], "a\"b\\\\\\xFF");
    assert_eq!(v["cut_short"], true);
    assert_eq!(v["local"], false);
    assert_eq!(v["user"], serde_json::Value::Null);
}

/// The user `--basic-auth` accepted is the third field (escaped as the others, a space
/// too, so the field still ends at the next space) and `user` in `json`.
#[test]
fn the_accepted_user_is_the_third_field_and_json_user() {
    let ann = Record {
        user: Some(b"ann"),
        ..record()
    };
    assert!(
        line(LogFormat::Combined, &ann)
            .starts_with("127.0.0.1 - ann [01/Dec/2026:00:16:22 +0000] \"GET /a"),
        "{}",
        line(LogFormat::Combined, &ann)
    );
    assert!(line(LogFormat::Common, &ann).starts_with("127.0.0.1 - ann ["));
    let odd = Record {
        user: Some(b"a b\"c\xe9"),
        ..record()
    };
    assert!(line(LogFormat::Common, &odd).starts_with("127.0.0.1 - a\\x20b\\\"c\\xE9 ["));
    let v: serde_json::Value = serde_json::from_str(&line(LogFormat::Json, &odd)).unwrap();
    assert_eq!(v["user"], "a b\"c\\xE9");
}

#[test]
fn the_longest_line_fits_and_stays_well_formed() {
    let target = vec![0x01u8; 8192];
    let ua = vec![b'"'; 4096];
    let r = Record {
        client: Some("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff".parse().unwrap()),
        request: RequestLine::Parsed {
            method: crate::http::Method::Options,
            target: &target,
            minor: 1,
        },
        status: 599,
        body_bytes: u64::MAX,
        referer: Some(&ua),
        user_agent: Some(&ua),
        user: Some(&[b' '; 255]),
        duration_us: u64::MAX,
        upstream: Some(&[b'"'; 112]),
        upstream_us: Some(u64::MAX),
        ..record()
    };
    for format in [LogFormat::Combined, LogFormat::Common, LogFormat::Json] {
        let mut buf = vec![0u8; LINE_MAX];
        let n = format_line(format, &r, &clock(), &mut buf);
        assert!(n < LINE_MAX, "{format:?}: {n}");
        assert_eq!(buf[n - 1], b'\n');
        assert_eq!(buf[..n - 1].iter().filter(|&&b| b == b'\n').count(), 0);
        if format == LogFormat::Json {
            let v: serde_json::Value = serde_json::from_slice(&buf[..n]).unwrap();
            assert_eq!(v["body_bytes"], u64::MAX);
        } else {
            let text = String::from_utf8(buf[..n].to_vec()).unwrap();
            let unescaped = text.replace("\\\\", "").replace("\\\"", "");
            assert_eq!(
                unescaped.matches('"').count(),
                if format == LogFormat::Common { 2 } else { 6 }
            );
        }
    }
}

#[test]
fn a_short_buffer_cuts_without_panic() {
    for len in 0..120 {
        let mut buf = vec![0u8; len];
        let n = format_line(LogFormat::Combined, &record(), &clock(), &mut buf);
        assert!(n <= len);
    }
}

#[test]
fn addresses_are_written_as_core_fmt_writes_them() {
    let addrs = [
        "0.0.0.0",
        "1.2.3.4",
        "10.0.0.255",
        "192.168.100.9",
        "255.255.255.255",
        "::1",
        "2001:db8::8a2e:370:7334",
        "::ffff:10.1.2.3",
    ];
    for text in addrs {
        let ip: IpAddr = text.parse().unwrap();
        let rec = Record {
            client: Some(ip),
            ..record()
        };
        let want = format!("{ip} - - [");
        assert!(line(LogFormat::Common, &rec).starts_with(&want), "{text}");
    }
}

/// The rule that answered is `rule` in `json`, after `user`, only when one did, and
/// the host that answered `host` after it, only with hosts; the other formats show
/// neither.
#[test]
fn json_names_the_rule_that_answered() {
    let ruled = Record {
        rule: Some(b"site.conf:3"),
        host: Some(b"a.test"),
        ..record()
    };
    let text = line(LogFormat::Json, &ruled);
    assert!(
        text.contains(",\"user\":null,\"rule\":\"site.conf:3\",\"host\":\"a.test\"}"),
        "{text}"
    );
    assert!(!line(LogFormat::Json, &record()).contains("rule"));
    assert!(!line(LogFormat::Json, &record()).contains("host"));
    assert!(!line(LogFormat::Combined, &ruled).contains("site.conf"));
    assert!(!line(LogFormat::Combined, &ruled).contains("a.test"));
}

/// A forwarded request's line ends in its upstream and the upstream's time to its head
/// (`null` when none came); a file's has neither key, and the other formats show
/// neither.
#[test]
fn json_names_the_upstream_and_its_time() {
    let forwarded = Record {
        rule: Some(b"--proxy /api/** unix:/run/app.sock"),
        upstream: Some(b"unix:/run/app.sock"),
        upstream_us: Some(412),
        ..record()
    };
    let text = line(LogFormat::Json, &forwarded);
    assert!(
        text.ends_with(",\"upstream\":\"unix:/run/app.sock\",\"upstream_us\":412}\n"),
        "{text}"
    );
    let gone = Record {
        upstream_us: None,
        ..forwarded
    };
    assert!(line(LogFormat::Json, &gone).ends_with(",\"upstream_us\":null}\n"));
    assert!(!line(LogFormat::Json, &record()).contains("upstream"));
    for format in [LogFormat::Combined, LogFormat::Common] {
        assert!(!line(format, &forwarded).contains("app.sock"));
    }
}
