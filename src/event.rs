//! Thin epoll layer: tokens with a generation, fixed event buffer.
