//! Stage 4: Plan to a checked steering program (asm-bpf).
