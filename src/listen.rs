//! Stage 5: one SO_REUSEPORT listener per worker, in plan order; the program attached once.
