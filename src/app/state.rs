//! What every handler can reach: the configuration, the database pool and the acceptor.
//! Each area's own pieces (rate limiter, trusted proxies, sign-in throttle, webhook sources,
//! metrics cache) are registered beside it by `app` as `web::Data` of their own type, so that
//! this module imports nothing above `accept` and every area can depend on it.

use std::sync::Arc;

use crate::accept::Acceptor;
use crate::config::Config;
use crate::db::Pool;
use crate::spam::SpamGuard;

pub struct AppState {
    pub config: Arc<Config>,
    pub pool: Pool,
    pub acceptor: Acceptor,
    /// Fill-time stamps and captcha checks (see `crate::spam`).
    pub spam: SpamGuard,
}
