//! A real headless Chromium driven through chromedriver's W3C WebDriver HTTP API.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: reqwest::Client,
    profile: std::path::PathBuf,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Browser {
    /// Starts chromedriver and a headless Chromium (Debian's packages: `chromium`,
    /// `chromium-driver`, installed by `.ci/run`).
    pub async fn start() -> Browser {
        let port = free_port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group, so that Drop can end the Chromium it starts too.
            .process_group(0)
            .spawn()
            .expect("chromedriver (apt-get install chromium chromium-driver)");
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while http.get(format!("{base}/status")).send().await.is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile =
            std::env::temp_dir().join(format!("onceform-chromium-{}", uuid::Uuid::new_v4().simple()));
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,1000",
        ];
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.display()));
        let caps = json!({"capabilities": {"alwaysMatch": {"browserName": "chrome",
            "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args}}}});
        // Chromium occasionally fails to come up on a loaded machine: try a few times.
        let mut created = Value::Null;
        for _ in 0..3 {
            created = match http.post(format!("{base}/session")).json(&caps).send().await {
                Ok(r) => r.json().await.unwrap_or_default(),
                Err(_) => Value::Null,
            };
            if created["value"]["sessionId"].is_string() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let session = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {created}"))
            .to_string();
        Browser { driver, base, session, http, profile }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let mut req = self.http.request(method, url);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let v: Value = req.send().await.unwrap().json().await.unwrap();
        assert!(v["value"].get("error").is_none(), "webdriver {path}: {v}");
        v["value"].clone()
    }

    pub async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({ "url": url }))).await;
    }

    pub async fn current_url(&self) -> String {
        self.call(reqwest::Method::GET, "/url", None).await.as_str().unwrap().to_string()
    }

    pub async fn source(&self) -> String {
        self.call(reqwest::Method::GET, "/source", None).await.as_str().unwrap().to_string()
    }

    /// Waits (up to 10 s) until the page contains `needle`, e.g. after a click that posts a form.
    pub async fn wait_for_text(&self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.source().await.contains(needle) {
            assert!(Instant::now() < deadline, "the page never showed {needle:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn find(&self, css: &str) -> String {
        let v = self
            .call(reqwest::Method::POST, "/element", Some(json!({"using": "css selector", "value": css})))
            .await;
        v[ELEMENT].as_str().unwrap_or_else(|| panic!("no element {css}")).to_string()
    }

    pub async fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css).await;
        self.call(reqwest::Method::POST, &format!("/element/{id}/value"), Some(json!({ "text": text })))
            .await;
    }

    pub async fn clear(&self, css: &str) {
        let id = self.find(css).await;
        self.call(reqwest::Method::POST, &format!("/element/{id}/clear"), Some(json!({}))).await;
    }

    pub async fn click(&self, css: &str) {
        let id = self.find(css).await;
        self.call(reqwest::Method::POST, &format!("/element/{id}/click"), Some(json!({}))).await;
    }

    /// Resizes the window to `width` × `height` CSS pixels.
    pub async fn resize(&self, width: u32, height: u32) {
        self.call(reqwest::Method::POST, "/window/rect", Some(json!({"width": width, "height": height})))
            .await;
    }

    /// Runs `script` (a function body) in the page and gives back what it returns.
    pub async fn execute(&self, script: &str) -> Value {
        self.call(reqwest::Method::POST, "/execute/sync", Some(json!({"script": script, "args": []}))).await
    }

    /// Saves a PNG of the viewport under `target/test-artifacts/NAME.png`.
    pub async fn screenshot(&self, name: &str) -> std::path::PathBuf {
        let data = self.call(reqwest::Method::GET, "/screenshot", None).await;
        let png = base64::engine::general_purpose::STANDARD.decode(data.as_str().unwrap()).unwrap();
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Killing chromedriver alone would leave its Chromium processes running.
        // SAFETY: kill(2) on the process group created for chromedriver at spawn.
        unsafe { libc::kill(-(self.driver.id() as i32), libc::SIGKILL) };
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}
