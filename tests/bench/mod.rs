//! `steerd bench`: load, A/B comparisons and the figures page.

mod ab;
mod figures;
mod load;
