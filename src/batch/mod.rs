//! `--batch`: the pieces of a batch that need no network and no scope: its
//! lines ([`input`]), the journal that lets a killed batch resume
//! ([`journal`]), the `-o TEMPLATE` that names each item's file
//! ([`template`]), and the summary line with the batch's exit code
//! ([`summary`]).

pub mod input;
pub mod journal;
pub mod summary;
pub mod template;
