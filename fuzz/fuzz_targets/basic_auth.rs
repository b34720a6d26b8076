//! Fuzz target `basic_auth`: any bytes as an htpasswd file, and as an `Authorization`
//! value.
//!
//! Never panics, never reads past the input. An `Authorization` value that decodes
//! gives a user without `:` and a user and password without control characters, both
//! within the decoder's buffer, and decodes the same with its scheme in other case; a
//! file that parses has at least one user, parses the same with CRLF line ends, and
//! every line the parser refuses is named by a number within the file.

#![no_main]

use libfuzzer_sys::fuzz_target;
use steerd::auth::basic::{decode, DECODED_MAX};
use steerd::auth::Credentials;

fuzz_target!(|data: &[u8]| {
    let mut buf = [0u8; DECODED_MAX];
    let first = decode(data, &mut buf).map(|(u, p)| (u.to_vec(), p.to_vec()));
    if let Some((user, password)) = &first {
        assert!(!user.contains(&b':'));
        assert!(user.len() + 1 + password.len() <= DECODED_MAX);
        assert!(user.iter().chain(password).all(|&b| b >= 0x20 && b != 0x7f));
        let mut upper = data.to_vec();
        upper[..5].make_ascii_uppercase();
        let again = decode(&upper, &mut buf).map(|(u, p)| (u.to_vec(), p.to_vec()));
        assert_eq!(again, first);
    }
    match Credentials::parse(data, [0; 16]) {
        Ok(c) => {
            assert!(!c.is_empty());
            let crlf: Vec<u8> = data
                .split(|&b| b == b'\n')
                .flat_map(|l| l.iter().copied().chain(*b"\r\n"))
                .collect();
            let again = Credentials::parse(&crlf, [0; 16]).map(|c| c.len());
            assert_eq!(again, Ok(c.len()));
        }
        Err(e) => {
            let lines = data.split(|&b| b == b'\n').count();
            assert!(e.line <= lines, "line {} of {lines}", e.line);
        }
    }
});
