//! Fuzz target `config_file`: any bytes as a configuration file (`--config`).
//!
//! Never panics. A file that is refused is refused in lines that each begin
//! `steerd: args: `, and one that names a line names one within the file. Comments and
//! blank lines change nothing but the numbers: the same file after two of them is
//! accepted or refused alike (refused at a line two further on), and with CRLF line
//! ends it gives the same settings. A file that is accepted gives the same settings
//! when read again.

use steerd::args::parse_serve_with_file;

const NAME: &str = "site.conf";

/// The properties above, for one input (the fuzz target and tests/code/fuzz_seeds.rs call it).
pub(super) fn holds(data: &[u8]) {
    let Ok(text) = core::str::from_utf8(data) else {
        return;
    };
    let read = |t: &str| parse_serve_with_file(&[], NAME, t);
    let first = read(text);
    let shifted = read(&format!("# a comment\n\n{text}"));
    match &first {
        Ok(args) => {
            assert_eq!(read(text).as_ref().ok(), Some(args));
            let crlf = text.replace('\n', "\r\n");
            if !text.contains('\r') {
                assert_eq!(read(&crlf).ok().map(|a| a.site), Some(args.site.clone()));
            }
            assert!(shifted.is_ok());
        }
        Err(e) => {
            let shown = e.to_string();
            assert!(
                shown.lines().all(|l| l.starts_with("steerd: args: ")),
                "{shown}"
            );
            let lines = text.lines().count();
            if let Some(n) = line_named(&shown) {
                assert!(n >= 1 && n <= lines, "line {n} of {lines}: {shown}");
                let again = shifted
                    .expect_err("refused after two more lines too")
                    .to_string();
                assert_eq!(line_named(&again), Some(n + 2), "{again}");
            }
        }
    }
}

/// The `N` of a first line `steerd: args: site.conf:N: ...`.
fn line_named(shown: &str) -> Option<usize> {
    let rest = shown.strip_prefix("steerd: args: site.conf:")?;
    rest.split(':').next()?.parse().ok()
}
