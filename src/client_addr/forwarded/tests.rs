//! `X-Forwarded-For` read for its last hop and walked past trusted proxies: fixtures per
//! rule, and the walk against a naive oracle (the lines joined into one string, split
//! into a vector, indexed from the end) on generated chains.

use super::*;

fn h<'a>(name: &'a str, value: &'a str) -> Header<'a> {
    Header {
        name: name.as_bytes(),
        value: value.as_bytes(),
    }
}

fn fields<'a>(values: &[&'a str]) -> Vec<Header<'a>> {
    let mut fields = vec![h("Host", "x")];
    fields.extend(values.iter().map(|v| h("X-Forwarded-For", v)));
    fields.push(h("User-Agent", "t"));
    fields
}

fn xff(values: &[&str]) -> Option<IpAddr> {
    forwarded_for(&fields(values), Walk::LastHop)
}

fn ip(s: &str) -> Option<IpAddr> {
    Some(s.parse().unwrap())
}

fn net(s: &str) -> Cidr {
    let (a, len) = s.split_once('/').unwrap();
    Cidr::new(a.parse().unwrap(), len.parse().unwrap()).unwrap()
}

/// The proxies of the recursive fixtures: a CDN's range, a balancer, IPv6 proxies.
fn trusted() -> Vec<Cidr> {
    vec![net("10.0.0.0/8"), net("192.0.2.7/32"), net("2001:db8::/32")]
}

fn walked(values: &[&str]) -> Option<IpAddr> {
    forwarded_for(&fields(values), Walk::PastTrusted(&trusted()))
}

#[test]
fn the_last_hop_wins() {
    assert_eq!(xff(&["203.0.113.9"]), ip("203.0.113.9"));
    assert_eq!(xff(&["1.1.1.1, 2.2.2.2,3.3.3.3"]), ip("3.3.3.3"));
    assert_eq!(xff(&["1.1.1.1", "2.2.2.2, 4.4.4.4"]), ip("4.4.4.4"));
    assert_eq!(xff(&["1.1.1.1, 2001:db8::9"]), ip("2001:db8::9"));
}

#[test]
fn whitespace_and_empty_elements() {
    assert_eq!(xff(&[" \t5.5.5.5 \t"]), ip("5.5.5.5"));
    assert_eq!(xff(&["6.6.6.6, ,"]), ip("6.6.6.6"));
    assert_eq!(xff(&["7.7.7.7", ""]), ip("7.7.7.7"));
    assert_eq!(xff(&["8.8.8.8", " , "]), ip("8.8.8.8"));
}

#[test]
fn ports_and_brackets() {
    assert_eq!(xff(&["9.9.9.9:5000"]), ip("9.9.9.9"));
    assert_eq!(xff(&["[2001:db8::1]"]), ip("2001:db8::1"));
    assert_eq!(xff(&["[2001:db8::1]:443"]), ip("2001:db8::1"));
    assert_eq!(xff(&["::ffff:1.2.3.4"]), ip("::ffff:1.2.3.4"));
}

#[test]
fn invalid_last_elements_give_none() {
    for v in [
        "1.1.1.1, unknown",
        "1.1.1.1, _hidden",
        "1.1.1.1, 300.1.1.1",
        "1.1.1.1, 01.2.3.4",
        "1.1.1.1, [1.2.3.4]",
        "1.1.1.1, \u{e9}",
        "1.1.1.1, 2.2.2.2 3.3.3.3",
        "",
        ",",
    ] {
        assert_eq!(xff(&[v]), None, "{v:?}");
        assert_eq!(walked(&[v]), None, "{v:?}");
    }
    assert_eq!(xff(&[]), None, "no field");
    let bad = [h("x-forwarded-for", "\u{ff}")];
    assert_eq!(forwarded_for(&bad, Walk::LastHop), None);
}

#[test]
fn name_is_case_insensitive() {
    let walk = Walk::LastHop;
    let f = [h("x-FORWARDED-for", "10.0.0.1")];
    assert_eq!(forwarded_for(&f, walk), ip("10.0.0.1"));
    assert_eq!(
        forwarded_for(&[h("X-Forwarded-Fo", "10.0.0.1")], walk),
        None
    );
}

#[test]
fn the_walk_passes_every_trusted_hop() {
    // client, CDN, balancer: the CDN's and the balancer's addresses are trusted.
    let chain = "203.0.113.9, 10.1.2.3, 192.0.2.7";
    assert_eq!(walked(&[chain]), ip("203.0.113.9"));
    assert_eq!(xff(&[chain]), ip("192.0.2.7"), "without it, the last hop");
    // An address the client made up, left of the client, is never reached.
    assert_eq!(
        walked(&["6.6.6.6, 203.0.113.9, 10.1.2.3"]),
        ip("203.0.113.9")
    );
    // The last hop not trusted: it is the client, as without the walk.
    assert_eq!(walked(&["10.1.1.1, 203.0.113.9"]), ip("203.0.113.9"));
    // IPv6 hops, bracketed, with ports; an IPv4-mapped proxy matches its IPv4 network.
    let v6 = "2001:db9::5, [2001:db8::1]:443, ::ffff:10.0.0.9";
    assert_eq!(walked(&[v6]), ip("2001:db9::5"));
}

#[test]
fn the_walk_spans_field_lines_in_order() {
    let lines = ["203.0.113.9", "", "10.0.0.1 , ", " 192.0.2.7"];
    assert_eq!(walked(&lines), ip("203.0.113.9"));
    assert_eq!(walked(&["1.1.1.1, 2.2.2.2", "10.0.0.1"]), ip("2.2.2.2"));
}

#[test]
fn every_hop_trusted_gives_the_leftmost() {
    assert_eq!(walked(&["10.0.0.1, 10.0.0.2, 192.0.2.7"]), ip("10.0.0.1"));
    assert_eq!(walked(&["10.0.0.3", "10.0.0.2"]), ip("10.0.0.3"));
}

#[test]
fn garbage_stops_the_walk_at_the_last_good_address() {
    assert_eq!(walked(&["203.0.113.9, unknown, 10.0.0.1"]), ip("10.0.0.1"));
    assert_eq!(
        walked(&["1.1.1.1, 2.2.2.2 10.0.0.5, 10.0.0.1"]),
        ip("10.0.0.1")
    );
    assert_eq!(
        walked(&["203.0.113.9, 10.0.0.2, _x, 10.0.0.1"]),
        ip("10.0.0.1")
    );
    // Garbage left of an untrusted address is never read.
    assert_eq!(
        walked(&["unknown, 203.0.113.9, 10.0.0.1"]),
        ip("203.0.113.9")
    );
}

/// The naive oracle: every line joined by commas, split into a vector, indexed from the
/// end while the address in hand is trusted.
fn naive(lines: &[String], trusted: &[Cidr]) -> Option<IpAddr> {
    let joined = lines.join(",");
    let elements: Vec<&str> = joined
        .split(',')
        .map(|e| e.trim_matches([' ', '\t']))
        .filter(|e| !e.is_empty())
        .collect();
    let mut i = elements.len().checked_sub(1)?;
    let mut client = address(elements[i].as_bytes())?;
    while i > 0 && trusted.iter().any(|c| c.contains(client)) {
        i -= 1;
        match address(elements[i].as_bytes()) {
            Some(left) => client = left,
            None => break,
        }
    }
    Some(client)
}

#[test]
fn the_walk_agrees_with_a_naive_oracle() {
    const POOL: [&str; 14] = [
        "10.0.0.1",
        "10.200.3.4:8080",
        "192.0.2.7",
        "[2001:db8::7]",
        "2001:db8:1::2",
        "::ffff:10.9.9.9",
        "203.0.113.9",
        "[2001:db9::1]:443",
        "198.51.100.1",
        "unknown",
        "_hidden",
        "1.2.3",
        "",
        " ",
    ];
    let trusted = trusted();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    for _ in 0..20_000 {
        let lines: Vec<String> = (0..next(4))
            .map(|_| {
                let parts: Vec<&str> = (0..next(5)).map(|_| POOL[next(POOL.len())]).collect();
                parts.join([",", ", ", " ,\t"][next(3)])
            })
            .collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let got = forwarded_for(&fields(&refs), Walk::PastTrusted(&trusted));
        assert_eq!(got, naive(&lines, &trusted), "{lines:?}");
        let last = forwarded_for(&fields(&refs), Walk::LastHop);
        assert_eq!(last, naive(&lines, &[]), "{lines:?}");
    }
}
