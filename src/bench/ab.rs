//! `steerd bench ab` (placeholder while written).
use super::Usage;
/// Entry point.
pub fn main(_args: &[String]) -> Result<i32, Usage> {
    Err(Usage("ab: not built yet".into()))
}
