//! `spawn_app()`: the real server on port 0 over a fresh database (a SQLite file or a new
//! PostgreSQL database, dropped afterwards), with helpers per route and for counting rows.

pub mod admin;
pub mod browser;
pub mod captcha;
pub mod chat;
pub mod clamd;
pub mod cluster;
pub mod crm;
pub mod delivery;
pub mod dingtalk;
pub mod discord;
pub mod feishu;
pub mod files;
pub mod hooks;
pub mod hubspot;
pub mod line;
pub mod oidc;
pub mod pipedrive;
pub mod proxy;
pub mod receiver;
pub mod salesforce;
pub mod serve_process;
pub mod sheets;
pub mod smtp;
pub mod static_site;
pub mod teams;
pub mod telegram;
pub mod vendor;
pub mod wecom;
pub mod worker_process;
pub mod zoho;

use std::path::PathBuf;
use std::sync::Arc;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use onceform::app::Application;
use onceform::config::Config;
use onceform::db::{DbError, Pool, Stats, Store};
use onceform::domain::keyring::Keyring;
use onceform::services::request_log::RequestLog;
use onceform::with_conn;
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Generates `sqlite::NAME` and `postgres::NAME` tests from `async fn NAME(Backend)`.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name($crate::support::Backend::Sqlite).await }) *
        }
        mod postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name($crate::support::Backend::Postgres).await }) *
        }
    };
}

/// Serves each connection on a fresh loopback port with `serve(stream, state)`; the base URL.
/// The fake servers (CRM, webhook receiver, captcha provider) share this accept loop.
pub async fn listen<S, F>(state: S, serve: fn(tokio::net::TcpStream, S) -> F) -> String
where
    S: Clone + Send + 'static,
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream, state.clone()));
        }
    });
    url
}

/// The PostgreSQL server tests create their databases on.
pub fn pg_admin_url() -> String {
    std::env::var("ONCEFORM_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// The test server has no Kerberos. With libpq's default `gssencmode=prefer`, a pool thread
/// still connecting when the test process exits can trip krb5's exit-time assertion
/// (`krb5int_getspecific`), so tests' connections skip GSSAPI.
pub const PG_TEST_PARAMS: &str = "gssencmode=disable";

/// A database that exists for one test.
pub struct TestDb {
    pub url: String,
    dir: Option<PathBuf>,
    pg_name: Option<String>,
}

impl TestDb {
    pub fn new(backend: Backend) -> TestDb {
        let tag = uuid::Uuid::new_v4().simple().to_string();
        match backend {
            Backend::Sqlite => {
                let dir = std::env::temp_dir().join(format!("onceform-test-{tag}"));
                std::fs::create_dir_all(&dir).unwrap();
                let url = format!("sqlite://{}", dir.join("onceform.db").display());
                TestDb { url, dir: Some(dir), pg_name: None }
            }
            Backend::Postgres => {
                let name = format!("onceform_t_{tag}");
                let mut admin = onceform::db::establish_pg(&pg_admin_url()).expect("PostgreSQL for tests");
                admin.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
                let base = pg_admin_url();
                let server = base.rsplit_once('/').map(|(s, _)| s).unwrap_or(&base);
                TestDb { url: format!("{server}/{name}?{PG_TEST_PARAMS}"), dir: None, pg_name: Some(name) }
            }
        }
    }

    /// A database the test does not own (a replicated cluster's, torn down with it).
    pub fn external(url: String) -> TestDb {
        TestDb { url, dir: None, pg_name: None }
    }

    /// The server's host:port (PostgreSQL).
    pub fn host_port(&self) -> String {
        self.url
            .split('@')
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or("127.0.0.1:5432")
            .to_string()
    }

    /// The same database reached through another host:port (e.g. a proxy).
    pub fn url_via(&self, host_port: &str) -> String {
        self.url.replace(&self.host_port(), host_port)
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        if let Some(name) = &self.pg_name {
            if let Ok(mut admin) = onceform::db::establish_pg(&pg_admin_url()) {
                let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
            }
        }
    }
}

pub struct TestApp {
    pub address: String,
    pub client: reqwest::Client,
    pub pool: Pool,
    pub config: Arc<Config>,
    /// The app's queue of delivery rows written in the background.
    pub deliveries: RequestLog,
    /// The forms in force (`put` changes them as a reload would).
    pub forms: Arc<onceform::config::LiveForms>,
    /// Dropped with the app: the database goes away after the test.
    _db: TestDb,
}

/// The server secret of the tests (pass it as `ONCEFORM_SECRET` to a child `onceform`).
pub const TEST_SECRET: &str = "onceform integration-test secret";

/// The keyring of `TEST_SECRET`: what the in-process apps, acceptors and lifecycle calls of
/// the tests digest with (a child `onceform` given `ONCEFORM_SECRET` loads the same).
pub fn test_keyring() -> Arc<Keyring> {
    Arc::new(Keyring::new(onceform::base::secret::Secret::new(TEST_SECRET), Vec::new()))
}

/// A fresh directory of its own for a spawned `onceform` (its working directory): whatever
/// it writes under ./data stays out of the checkout.
pub fn own_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("onceform-run-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The demo configuration, rate limits off, on a fresh database of `backend`.
pub fn test_config(db_url: &str) -> Config {
    let mut config = Config::builtin().unwrap();
    config.database.url = onceform::db::DatabaseUrl::parse(db_url).unwrap();
    config.server.bind = "127.0.0.1:0".parse().unwrap();
    config.server.rate_limit = false;
    config.server.http_workers = 2;
    // Every scrape counts afresh (tests that check the cache set their own age).
    config.server.metrics_cache_ms = 0;
    // Everything the server writes goes to a directory of this test's, never the working
    // directory's ./data (the demo's): mail and lead files, the secret, the admin password.
    let dir = std::env::temp_dir().join(format!("onceform-test-{}", uuid::Uuid::new_v4().simple()));
    let at = |name: &str| dir.join(name).to_string_lossy().into_owned();
    config.server.spool_dir = at("spool");
    config.server.files_dir = at("files");
    config.server.secret_file = at("secret");
    config.server.initial_password_file = at("initial-admin-password");
    config.smtp.mail_dir = at("mail");
    set_crm(&mut config, "file", &[("dir", &at("crm"))]);
    config
}

/// `[crm.NAME]` given in code: adapter `name`'s table with these string settings (the
/// adapter parses it as it would the file's).
pub fn set_crm(config: &mut Config, name: &str, settings: &[(&str, &str)]) {
    let table = settings.iter().map(|(k, v)| (k.to_string(), toml::Value::String(v.to_string()))).collect();
    onceform::services::effects::crm::set_table(&mut config.crm, name, table).unwrap();
}

pub async fn spawn_app(backend: Backend) -> TestApp {
    spawn_app_with(backend, |_| {}).await
}

pub async fn spawn_app_with(backend: Backend, tweak: impl FnOnce(&mut Config)) -> TestApp {
    let db = TestDb::new(backend);
    let mut config = test_config(&db.url);
    tweak(&mut config);
    spawn_on(db, config).await
}

/// Starts the server with `config` (its database URL may differ from `db.url`, e.g. a proxy).
pub async fn spawn_on(db: TestDb, config: Config) -> TestApp {
    spawn_from(db, config, onceform::services::reload::ConfigSource::Given).await
}

/// Starts the server with `config`, read from `source` (what a reload reads again).
pub async fn spawn_from(
    db: TestDb,
    config: Config,
    source: onceform::services::reload::ConfigSource,
) -> TestApp {
    let database = config.database.clone();
    let pool = tokio::task::spawn_blocking(move || Pool::connect(&database)).await.unwrap().unwrap();
    let config = Arc::new(config);
    let app =
        Application::build_from(config.clone(), source, pool.clone(), test_keyring(), Default::default())
            .unwrap();
    let address = format!("http://127.0.0.1:{}", app.port());
    let deliveries = app.deliveries();
    let forms = app.forms();
    tokio::spawn(app.run());
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    TestApp { address, client, pool, config, deliveries, forms, _db: db }
}

/// A valid contact submission.
pub fn inquiry(message: &str) -> Value {
    json!({"name": "Ada Lovelace", "email": "ada@example.com", "company": "Analytical Engines",
           "topic": "Sales", "message": message})
}

pub fn new_key() -> String {
    format!("test-{}", uuid::Uuid::new_v4().simple())
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    /// The `/metrics` page.
    pub async fn metrics(&self) -> String {
        self.client.get(self.url("/metrics")).send().await.unwrap().text().await.unwrap()
    }

    /// `onceform_refused_requests_total` of `form` for `reason` (0 when never counted).
    pub async fn refused(&self, form: &str, reason: &str) -> u64 {
        let line = format!("onceform_refused_requests_total{{form=\"{form}\",reason=\"{reason}\"}} ");
        let metrics = self.metrics().await;
        metrics.lines().find_map(|l| l.strip_prefix(&line)).map_or(0, |n| n.parse().unwrap())
    }

    /// `POST /api/forms/contact/submissions` with `key` in the Idempotency-Key header.
    pub async fn submit(&self, key: &str, body: &Value) -> reqwest::Response {
        self.client
            .post(self.url("/api/forms/contact/submissions"))
            .header("Idempotency-Key", key)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// Row counts, once the delivery rows queued so far are written.
    pub async fn stats(&self) -> Stats {
        self.deliveries.flush().await;
        let pool = self.pool.clone();
        tokio::task::spawn_blocking(move || with_conn!(&pool, |c| c.stats().map_err(DbError::from)))
            .await
            .unwrap()
            .unwrap()
    }

    /// Waits until the duplicate screener has judged every pair the accept path linked (none
    /// is `screening` any more); loud after 10 s.
    pub async fn until_screened(&self) {
        use onceform::db::schema::duplicate_pairs::dsl as p;
        for _ in 0..400 {
            let screening: i64 = self
                .query(|pool| {
                    with_conn!(pool, |c| p::duplicate_pairs
                        .filter(p::status.eq("screening"))
                        .count()
                        .get_result(c)
                        .map_err(DbError::from))
                })
                .await;
            if screening == 0 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("duplicate pairs still screening after 10 s");
    }

    /// (original, duplicate, score, reasons JSON, status) of every duplicate pair, highest
    /// score first, once the screener has judged them all.
    pub async fn screened_pairs(&self) -> Vec<(String, String, f64, String, String)> {
        use onceform::db::schema::duplicate_pairs::dsl as p;
        self.until_screened().await;
        self.query(|pool| {
            with_conn!(pool, |c| p::duplicate_pairs
                .order(p::score.desc())
                .select((p::original_id, p::duplicate_id, p::score, p::reasons, p::status))
                .load(c)
                .map_err(DbError::from))
        })
        .await
    }

    /// Runs a query on the app's database (both backends) from a blocking thread.
    pub async fn query<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Pool) -> Result<T, DbError> + Send + 'static,
    ) -> T {
        let pool = self.pool.clone();
        tokio::task::spawn_blocking(move || f(&pool)).await.unwrap().unwrap()
    }

    /// The rows of every table (the tables `src/db/schema.rs` declares), by table.
    pub async fn row_counts(&self) -> std::collections::BTreeMap<String, i64> {
        use diesel::prelude::*;
        #[derive(QueryableByName)]
        struct Count {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let schema = include_str!("../../../src/db/schema.rs");
        let tables: Vec<String> = schema
            .split("diesel::table! {")
            .skip(1)
            .filter_map(|t| t.split_whitespace().next().map(|name| name.trim_end_matches('(').to_string()))
            .collect();
        assert!(tables.len() > 10, "{tables:?}");
        self.query(move |pool| {
            onceform::with_conn!(pool, |c| {
                let mut out = std::collections::BTreeMap::new();
                for t in tables {
                    let count: Count =
                        diesel::sql_query(format!("SELECT COUNT(*) AS n FROM {t}")).get_result(c)?;
                    out.insert(t, count.n);
                }
                Ok::<_, onceform::db::DbError>(out)
            })
        })
        .await
    }

    /// The stored fields of the submission under (contact, `key`), as JSON.
    pub async fn stored_fields(&self, key: &str) -> Option<Value> {
        use onceform::db::schema::submissions::dsl as s;
        let key = key.to_string();
        let text: Option<Option<String>> = self
            .query(move |pool| {
                with_conn!(pool, |c| s::submissions
                    .filter(s::form.eq("contact").and(s::operation_id.eq(&key)))
                    .select(s::fields_json)
                    .first::<Option<String>>(c)
                    .optional()
                    .map_err(DbError::from))
            })
            .await;
        text.flatten().map(|t| serde_json::from_str(&t).unwrap())
    }

    /// The id of the first (lowest batch) side-effect record of `kind`.
    pub async fn effect_id(&self, kind: &str) -> String {
        use onceform::db::schema::side_effects::dsl as e;
        let kind = kind.to_string();
        self.query(move |pool| {
            with_conn!(pool, |c| e::side_effects
                .filter(e::kind.eq(&kind))
                .order(e::batch)
                .select(e::id)
                .first::<String>(c)
                .map_err(DbError::from))
        })
        .await
    }

    /// (kind, state) of every side-effect record of the submission under `key`.
    pub async fn effects_of(&self, key: &str) -> Vec<(String, String)> {
        let (form, key) = ("contact".to_string(), key.to_string());
        self.query(move |pool| {
            with_conn!(pool, |c| {
                let Some(s) = c.find_submission(&form, &key)? else { return Ok(Vec::new()) };
                Ok(c.effects_of(&s.id)?
                    .into_iter()
                    .map(|e| (e.kind.to_string(), e.state.to_string()))
                    .collect())
            })
        })
        .await
    }
}

/// The problem type slug of a problem+json body.
pub fn problem_type(body: &Value) -> &str {
    body["type"].as_str().unwrap_or("").rsplit('/').next().unwrap_or("")
}

/// Accepts `n` contact submissions directly through the accept transaction (no HTTP).
pub async fn seed(pool: &Pool, config: &Config, n: usize) {
    let (pool, config) = (pool.clone(), config.clone());
    tokio::task::spawn_blocking(move || {
        let form = onceform::config::Form::new("contact", config.form("contact").unwrap().clone());
        let acceptor =
            onceform::services::accept::Acceptor::one_transaction_each(config.into(), pool, test_keyring())
                .unwrap();
        for i in 0..n {
            let mut body = inquiry(&format!("Inquiry number {i}"));
            body["email"] = format!("seed-{i}@example.com").into(); // one visitor each
            let raw = body
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                .collect();
            let fields = onceform::domain::normalise(&*form, &raw).unwrap();
            let operation_id = Some(onceform::domain::OperationId::generate());
            let channel = onceform::services::request_log::Channel::Api;
            let intake = onceform::services::accept::Intake {
                form: form.clone(),
                operation_id,
                channel,
                fields,
                scans: Default::default(),
                received: None,
                test: false,
            };
            acceptor.accept(intake).unwrap();
        }
    })
    .await
    .unwrap();
}
