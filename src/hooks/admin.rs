//! Admin pages for inbound webhooks (see `admin/`).
