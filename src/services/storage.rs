//! The database as the web layer names it: the pool it holds in its state and the error a
//! use case returns. The web reaches the database only through the use cases; these two
//! types are all it names of it.

pub use crate::db::{DbError, Pool, Writes};
