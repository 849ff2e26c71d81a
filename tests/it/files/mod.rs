//! Attached files: the ways in, replays and conflicts, limits, scanning, admin, lifecycle.

mod attach;
mod import;
mod kept;
mod links;
mod scanner;
mod scanning;
mod unscannable;
