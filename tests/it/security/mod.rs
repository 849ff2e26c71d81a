//! Security: captcha, erasure, refusals, hardening, headers, spam, the modes of data files.

pub mod captcha;
pub mod erasure;
pub mod forged_files;
pub mod headers;
pub mod hooks;
pub mod private_files;
pub mod private_targets;
pub mod public_hardening;
pub mod refusals;
pub mod small;
pub mod spam;
pub mod upload_turns;
