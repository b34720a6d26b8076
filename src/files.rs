//! Path to open file under the root (openat2 RESOLVE_BENEATH), metadata, MIME.
