//! The binary plain `cargo build` makes is static, as the README promises: its ELF has
//! no `PT_INTERP` (no dynamic loader to find at run time) and no `DT_NEEDED` (no shared
//! library). The flags come from `.cargo/config.toml`; the suite's binary is built with
//! the same ones as `cargo build --release`.
//!
//! Required reading: the ELF program header table (elf(5): `PT_INTERP`, `PT_DYNAMIC`,
//! `DT_NEEDED`).

use std::convert::TryInto;

const PT_DYNAMIC: u32 = 2;
const PT_INTERP: u32 = 3;
const DT_NEEDED: u64 = 1;

/// Reads unsigned fields of either byte order and either class.
struct Elf<'a> {
    b: &'a [u8],
    wide: bool,
    big: bool,
}

impl Elf<'_> {
    fn uint(&self, at: usize, len: usize) -> u64 {
        let s = &self.b[at..at + len];
        let mut v = 0u64;
        for i in 0..len {
            let byte = if self.big { s[i] } else { s[len - 1 - i] };
            v = (v << 8) | u64::from(byte);
        }
        v
    }

    /// A word of the class: 8 bytes for ELF64, 4 for ELF32.
    fn word(&self, at: usize) -> u64 {
        self.uint(at, if self.wide { 8 } else { 4 })
    }

    /// The program headers: (type, file offset, file size).
    fn segments(&self) -> Vec<(u32, usize, usize)> {
        let (phoff, entsize_at, num_at) = if self.wide {
            (self.word(0x20), 0x36, 0x38)
        } else {
            (self.word(0x1c), 0x2a, 0x2c)
        };
        let entsize = self.uint(entsize_at, 2) as usize;
        let n = self.uint(num_at, 2) as usize;
        (0..n)
            .map(|i| {
                let h = phoff as usize + i * entsize;
                let kind = self.uint(h, 4) as u32;
                let (off, size) = if self.wide {
                    (self.word(h + 8), self.word(h + 32))
                } else {
                    (self.word(h + 4), self.word(h + 16))
                };
                (kind, off.try_into().unwrap(), size.try_into().unwrap())
            })
            .collect()
    }
}

/// What links `path` at run time: `Err` names the loader or the first needed library.
fn static_or_why(path: &str) -> Result<(), String> {
    let bytes = std::fs::read(path).expect("read the binary");
    assert_eq!(&bytes[..4], b"\x7fELF", "{path}: an ELF file");
    let elf = Elf {
        b: &bytes,
        wide: bytes[4] == 2,
        big: bytes[5] == 2,
    };
    let segments = elf.segments();
    assert!(!segments.is_empty(), "{path}: program headers found");
    if segments.iter().any(|s| s.0 == PT_INTERP) {
        return Err("it names a dynamic loader (PT_INTERP)".into());
    }
    for &(_, off, size) in segments.iter().filter(|s| s.0 == PT_DYNAMIC) {
        let step = if elf.wide { 16 } else { 8 };
        if (off..off + size)
            .step_by(step)
            .any(|at| elf.word(at) == DT_NEEDED)
        {
            return Err("it needs a shared library (DT_NEEDED)".into());
        }
    }
    Ok(())
}

#[test]
fn the_cargo_built_binary_needs_no_loader_and_no_shared_library() {
    let bin = env!("CARGO_BIN_EXE_steerd");
    if let Err(why) = static_or_why(bin) {
        panic!("{bin} is not static: {why}");
    }
}

/// The check can fail: a dynamically linked program (Debian's shell) is seen as one.
#[test]
fn a_dynamic_program_is_told_apart() {
    let sh = std::fs::canonicalize("/bin/sh").expect("/bin/sh");
    assert!(
        static_or_why(sh.to_str().unwrap()).is_err(),
        "{sh:?} is dynamic on Debian"
    );
}
