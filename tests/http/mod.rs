//! The request parser: every vector in `tests/data/http/`, and the same heads through httparse;
//! the chunked body decoder's vectors.

mod chunked;
mod differential;
mod vectors;
