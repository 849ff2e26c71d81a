//! The web layer: `AppState`, page rendering, the public surface (`http`), the admin, the
//! inbound webhooks.

pub mod admin;
pub mod hooks;
pub mod http;
pub mod render;
pub mod state;
