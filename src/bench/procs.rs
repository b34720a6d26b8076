//! Server process figures from /proc (placeholder while written).
