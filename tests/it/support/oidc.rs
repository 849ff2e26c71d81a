//! A real OpenID provider on loopback (`tests/fixtures/oidc/provider.mjs`: npm's
//! `oidc-provider`, installed by ./test.sh into target/test-tools/npm, run by Node.js) and a
//! browser that walks its sign-in: a cookie jar per origin, its login and consent forms
//! filled as a person would.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

use onceform::config::{Config, OidcConfig};

use super::admin::{csrf_of, AdminSession};

pub const CLIENT_ID: &str = "onceform-admin";
pub const CLIENT_SECRET: &str = "client secret of the oidc tests";
/// The variable `client_secret_env` names.
pub const SECRET_VAR: &str = "ONCEFORM_TEST_OIDC_CLIENT_SECRET";
pub const LABEL: &str = "Test IdP";

pub struct OidcProvider {
    child: Child,
    pub issuer: String,
    port: u16,
    key_dir: PathBuf,
    public_url: String,
}

fn modules() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-tools/npm/node_modules");
    assert!(
        dir.join("oidc-provider/package.json").exists(),
        "oidc-provider is missing: run ./test.sh, which installs it into {}",
        dir.display()
    );
    dir
}

impl OidcProvider {
    /// The provider for an onceform reached at `public_url`, signing with key `key`.
    pub fn start(public_url: &str, key: &str) -> OidcProvider {
        let key_dir =
            std::env::temp_dir().join(format!("onceform-oidc-keys-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&key_dir).unwrap();
        let (child, issuer) = spawn(0, &key_dir, key, public_url);
        let port = issuer.rsplit(':').next().unwrap().parse().unwrap();
        OidcProvider { child, issuer, port, key_dir, public_url: public_url.to_string() }
    }

    /// Stops the provider and starts it again on the same address with key `key` only: its
    /// JWKS then lists that key alone (the other is retired).
    pub fn restart_with_key(&mut self, key: &str) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let (child, issuer) = spawn(self.port, &self.key_dir, key, &self.public_url);
        assert_eq!(issuer, self.issuer);
        self.child = child;
    }

    /// The ID token of the next token response is `tamper`ed, re-signed for another
    /// `audience`, re-signed `expired`, or signed with the `retired` key `key`.
    pub async fn next_token(&self, mode: &str, key: Option<&str>) {
        let resp = reqwest::Client::new()
            .post(format!("{}/__test/next-token", self.issuer))
            .form(&[("mode", mode), ("key", key.unwrap_or(""))])
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 204);
    }

    /// How often this provider process served its JWKS.
    pub async fn jwks_downloads(&self) -> u64 {
        let stats: serde_json::Value =
            reqwest::get(format!("{}/__test/stats", self.issuer)).await.unwrap().json().await.unwrap();
        stats["jwks"].as_u64().unwrap()
    }

    /// `[admin.oidc]` for this provider.
    pub fn config(&self) -> OidcConfig {
        toml::from_str(&format!(
            "issuer = '{}'\nclient_id = '{CLIENT_ID}'\nclient_secret_env = '{SECRET_VAR}'\n\
             role_claim = 'roles'\nadmin_values = ['onceform-admins']\nviewer_values = ['onceform-viewers']\n\
             scopes = ['openid', 'email', 'roles']\nlabel = '{LABEL}'\n",
            self.issuer
        ))
        .unwrap()
    }

    /// Sets up `config` to sign in with this provider at `public_url` (bound there).
    pub fn apply(&self, config: &mut Config, public_url: &str) {
        std::env::set_var(SECRET_VAR, CLIENT_SECRET);
        config.server.bind = public_url.trim_start_matches("http://").parse().unwrap();
        config.server.public_url = Some(public_url.to_string());
        config.admin.oidc = Some(self.config());
    }
}

fn spawn(port: u16, key_dir: &std::path::Path, key: &str, public_url: &str) -> (Child, String) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oidc/provider.mjs");
    let mut child = Command::new("node")
        .arg(script)
        .env("OIDC_MODULES", modules())
        .env("OIDC_PORT", port.to_string())
        .env("OIDC_KEY_DIR", key_dir)
        .env("OIDC_KEY", key)
        .env("OIDC_CLIENT_ID", CLIENT_ID)
        .env("OIDC_CLIENT_SECRET", CLIENT_SECRET)
        .env("OIDC_REDIRECT_URI", format!("{public_url}/admin/oidc/callback"))
        .env("OIDC_POST_LOGOUT_URI", format!("{public_url}/admin/login"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("node runs the OpenID provider fixture");
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut line).unwrap();
    // Read on, or its next write would fail (EPIPE) and end the provider.
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let issuer = line
        .trim()
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("provider said {line:?}"))
        .to_string();
    (child, issuer)
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.key_dir);
    }
}

/// A free loopback port's base URL for an onceform to bind (its public URL, known before it
/// starts, as the provider's redirect URI needs).
pub fn free_public_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}", l.local_addr().unwrap())
}

/// One answer as the browser saw it.
pub struct Page {
    pub url: String,
    pub status: u16,
    /// `Location`, made absolute.
    pub location: Option<String>,
    pub body: String,
    /// The cookies it set (name → value; empty: removed).
    pub set_cookies: BTreeMap<String, String>,
}

/// A browser: no redirects followed by itself, cookies kept per origin.
pub struct Browser {
    client: reqwest::Client,
    jar: Mutex<HashMap<String, BTreeMap<String, String>>>,
}

fn origin(url: &str) -> String {
    let u = url::Url::parse(url).unwrap();
    u.origin().ascii_serialization()
}

impl Default for Browser {
    fn default() -> Self {
        Browser {
            client: reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap(),
            jar: Mutex::default(),
        }
    }
}

impl Browser {
    pub async fn get(&self, url: &str) -> Page {
        self.send(url, self.client.get(url)).await
    }

    pub async fn post(&self, url: &str, form: &[(String, String)]) -> Page {
        self.send(url, self.client.post(url).form(form)).await
    }

    async fn send(&self, url: &str, req: reqwest::RequestBuilder) -> Page {
        let cookies = self.cookie_header(url);
        let req = if cookies.is_empty() { req } else { req.header("Cookie", cookies) };
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let base = url::Url::parse(url).unwrap();
        let location =
            resp.headers().get("location").map(|l| base.join(l.to_str().unwrap()).unwrap().to_string());
        let mut set_cookies = BTreeMap::new();
        for v in resp.headers().get_all("set-cookie").iter().filter_map(|v| v.to_str().ok()) {
            let (pair, attrs) = v.split_once(';').unwrap_or((v, ""));
            let (name, value) = pair.split_once('=').unwrap();
            let attrs = attrs.to_ascii_lowercase();
            let removed = value.is_empty() || attrs.contains("max-age=0") || attrs.contains("1970");
            set_cookies
                .insert(name.trim().to_string(), if removed { String::new() } else { value.to_string() });
        }
        {
            let mut jar = self.jar.lock().unwrap();
            let cookies = jar.entry(origin(url)).or_default();
            for (name, value) in &set_cookies {
                if value.is_empty() {
                    cookies.remove(name);
                } else {
                    cookies.insert(name.clone(), value.clone());
                }
            }
        }
        Page { url: url.to_string(), status, location, body: resp.text().await.unwrap(), set_cookies }
    }

    fn cookie_header(&self, url: &str) -> String {
        let jar = self.jar.lock().unwrap();
        jar.get(&origin(url))
            .map(|c| c.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join("; "))
            .unwrap_or_default()
    }

    /// The value of cookie `name` of `url`'s origin.
    pub fn cookie(&self, url: &str, name: &str) -> Option<String> {
        self.jar.lock().unwrap().get(&origin(url)).and_then(|c| c.get(name).cloned())
    }

    /// From onceform's "Sign in with …" (`/admin/oidc/start`) through the provider's login
    /// (as `login`) and consent forms, up to the provider's redirect back: the callback URL,
    /// not yet visited.
    pub async fn authorize(&self, public_url: &str, login: &str) -> String {
        let start = self.get(&format!("{public_url}/admin/oidc/start")).await;
        assert_eq!(start.status, 303, "start: {}", start.body);
        let mut next = start.location.unwrap();
        let callback = format!("{public_url}/admin/oidc/callback");
        for _ in 0..20 {
            if next.starts_with(&callback) {
                return next;
            }
            let page = self.get(&next).await;
            next = match page.status {
                300..=399 => page.location.unwrap(),
                200 => {
                    let (action, fields) = form_of(&page, login);
                    let answer = self.post(&action, &fields).await;
                    assert!(
                        (300..400).contains(&answer.status),
                        "{action}: {} {}",
                        answer.status,
                        answer.body
                    );
                    answer.location.unwrap()
                }
                s => panic!("{next}: {s} {}", page.body),
            };
        }
        panic!("the provider never sent the browser back");
    }

    /// Signs in through the provider as `login`: the callback's page.
    pub async fn sign_in(&self, public_url: &str, login: &str) -> Page {
        let callback = self.authorize(public_url, login).await;
        self.get(&callback).await
    }

    /// The session (cookie and CSRF token of its pages) of this browser at `public_url`.
    pub async fn session(&self, public_url: &str) -> AdminSession {
        let value = self.cookie(public_url, "onceform_session").expect("a session cookie");
        let page = self.get(&format!("{public_url}/admin/effects")).await;
        assert_eq!(page.status, 200, "{}", page.body);
        AdminSession { cookie: format!("onceform_session={value}"), csrf: csrf_of(&page.body) }
    }
}

/// The first form of `page` with its hidden fields, `login` and a password filled in.
fn form_of(page: &Page, login: &str) -> (String, Vec<(String, String)>) {
    let body = &page.body;
    let form = body.find("<form").unwrap_or_else(|| panic!("no form at {}: {body}", page.url));
    let tag = &body[form..form + body[form..].find('>').unwrap()];
    let action = attr(tag, "action").unwrap();
    let action = url::Url::parse(&page.url).unwrap().join(&html_unescape(&action)).unwrap().to_string();
    let end = form + body[form..].find("</form>").unwrap();
    let mut fields = Vec::new();
    for input in body[form..end].split("<input").skip(1) {
        let input = &input[..input.find('>').unwrap()];
        let Some(name) = attr(input, "name") else { continue };
        let value = match name.as_str() {
            "login" => login.to_string(),
            "password" => "any password".to_string(),
            _ => html_unescape(&attr(input, "value").unwrap_or_default()),
        };
        fields.push((name, value));
    }
    (action, fields)
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(tag[at..].split('"').next()?.to_string())
}

fn html_unescape(s: &str) -> String {
    s.replace("&amp;", "&").replace("&#x2F;", "/").replace("&#x3D;", "=").replace("&quot;", "\"")
}
