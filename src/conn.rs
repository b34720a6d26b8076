//! The connection state machine.
