//! What every handler can reach: the configuration, the database pool, the acceptor and
//! the keyring.
//! Each area's own pieces (rate limiter, trusted proxies, sign-in throttle, webhook sources,
//! metrics cache) are registered beside it by `app` as `web::Data` of their own type, so that
//! this module imports nothing above `accept` and every area can depend on it.

use std::sync::Arc;

use crate::config::{Config, Form, Forms, LiveForms, Secrets};
use crate::domain::keyring::Keyring;
use crate::services::accept::Acceptor;
use crate::services::files::Files;
use crate::services::reload::ConfigSource;
use crate::services::request_log::RefusedCounts;
use crate::services::spam::SpamGuard;
use crate::services::storage::Pool;

pub struct AppState {
    /// The configuration the process started with (its forms may have been reloaded since:
    /// `forms`).
    pub config: Arc<Config>,
    /// The forms in force (`SIGHUP` and `onceform reload` put a new configuration's in).
    pub forms: Arc<LiveForms>,
    pub pool: Pool,
    pub acceptor: Acceptor,
    /// The server secret's keyed digests (the acceptor's: `Acceptor::keyring`).
    pub keyring: Arc<Keyring>,
    /// Fill-time stamps and captcha checks (see `crate::services::spam`).
    pub spam: SpamGuard,
    /// Submit requests refused before the accept transaction, by form and reason.
    pub refused: RefusedCounts,
    /// Where attached files are stored (`[server] files_dir`).
    pub files: Files,
    /// Where the configuration is read again from (the admin's reload button).
    pub source: ConfigSource,
}

impl AppState {
    /// The state of a server started with `config` and the environment `secrets`.
    pub fn new(
        config: Arc<Config>,
        secrets: Arc<Secrets>,
        pool: Pool,
        acceptor: Acceptor,
        spam: SpamGuard,
    ) -> crate::base::metrics::Result<AppState> {
        let forms = Arc::new(LiveForms::new(config.clone(), secrets)?);
        let refused = RefusedCounts::new(config.forms.keys())?;
        let keyring = acceptor.keyring().clone();
        let files = Files::of(&config.server, &config.database);
        let source = ConfigSource::Given;
        Ok(AppState { config, forms, pool, acceptor, keyring, spam, refused, files, source })
    }

    /// The form named `name` as in force now, if it is configured.
    pub fn form(&self, name: &str) -> Option<Form> {
        self.forms.now().get(name).cloned()
    }

    /// The forms in force now: a page that lists or reads several keeps one set.
    pub fn forms(&self) -> Arc<Forms> {
        self.forms.now()
    }
}
