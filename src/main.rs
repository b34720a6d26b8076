//! The steerd binary: arguments in, exit status out. All work happens in the library.

fn main() {
    let mut args = Vec::new();
    for a in std::env::args_os().skip(1) {
        match a.into_string() {
            Ok(s) => args.push(s),
            Err(bad) => {
                eprintln!("steerd: args: argument {bad:?} is not valid UTF-8");
                std::process::exit(2);
            }
        }
    }
    std::process::exit(steerd::cmd::run(&args));
}
