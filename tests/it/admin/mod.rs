//! The admin: effects, pages, review, sessions, sign-in.

pub mod all_pages;
pub mod effects;
pub mod form_editor;
pub mod forms;
pub mod i18n;
pub mod login_throttle;
pub mod oidc;
pub mod pages;
pub mod review;
pub mod sessions;
