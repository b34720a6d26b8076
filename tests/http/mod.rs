//! The request parser: every vector in `tests/data/http/`, and the same heads through httparse.

mod differential;
mod vectors;
