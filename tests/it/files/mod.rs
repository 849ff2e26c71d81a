//! Attached files: the ways in, replays and conflicts, limits, scanning, admin, lifecycle.

pub mod attach;
mod database;
mod import;
mod kept;
mod links;
mod scanner;
mod scanning;
mod unscannable;
