//! A static website on its own loopback origin: serves one HTML page at every path, and
//! an HTTP proxy in front of onceform that can forward a submission and then drop the
//! answer (the browser sees a network error after the server has accepted).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

pub struct StaticSite {
    /// `http://127.0.0.1:PORT`, the page's origin.
    pub origin: String,
    page: Arc<Mutex<String>>,
}

impl StaticSite {
    pub async fn start() -> StaticSite {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let page: Arc<Mutex<String>> = Arc::default();
        let p = page.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let p = p.clone();
                tokio::spawn(async move {
                    let Some((mut stream, _)) = read_request(stream).await else { return };
                    let body = p.lock().unwrap().clone();
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(body.as_bytes()).await;
                });
            }
        });
        StaticSite { origin, page }
    }

    pub fn set_page(&self, html: String) {
        *self.page.lock().unwrap() = html;
    }
}

/// A request as the proxy saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub idempotency_key: Option<String>,
    /// The answer was dropped after the server produced it.
    pub dropped: bool,
}

#[derive(Clone)]
pub struct HttpProxy {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    drop_next_submit: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl HttpProxy {
    pub async fn start(target: String) -> HttpProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let proxy = HttpProxy { url, drop_next_submit: Arc::default(), seen: Arc::default() };
        let p = proxy.clone();
        let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(p.clone().forward(stream, client.clone(), target.clone()));
            }
        });
        proxy
    }

    /// The next `POST …/submissions` reaches the server; its answer never reaches the client.
    pub fn drop_next_submit(&self) {
        self.drop_next_submit.store(true, Ordering::SeqCst);
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    async fn forward(self, stream: TcpStream, client: reqwest::Client, target: String) {
        let Some((mut stream, req)) = read_request(stream).await else { return };
        let (method, path, headers, body) = req;
        let mut out = client.request(method.parse().unwrap(), format!("{target}{path}")).body(body);
        for (name, value) in &headers {
            if !["host", "connection", "content-length"].contains(&name.to_ascii_lowercase().as_str()) {
                out = out.header(name, value);
            }
        }
        let key =
            headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("idempotency-key")).map(|(_, v)| v.clone());
        let Ok(resp) = out.send().await else { return };
        let status = resp.status();
        let mut head =
            format!("HTTP/1.1 {} {}\r\n", status.as_u16(), status.canonical_reason().unwrap_or(""));
        for (name, value) in resp.headers() {
            if !["connection", "content-length", "transfer-encoding"].contains(&name.as_str()) {
                head.push_str(&format!("{name}: {}\r\n", value.to_str().unwrap_or("")));
            }
        }
        let body = resp.bytes().await.unwrap_or_default();
        let dropped = method == "POST"
            && path.ends_with("/submissions")
            && self.drop_next_submit.swap(false, Ordering::SeqCst);
        self.seen.lock().unwrap().push(Seen { method, path, idempotency_key: key, dropped });
        if dropped {
            return; // the connection closes without an answer
        }
        head.push_str(&format!("content-length: {}\r\nconnection: close\r\n\r\n", body.len()));
        let _ = stream.write_all(head.as_bytes()).await;
        let _ = stream.write_all(&body).await;
    }
}

type Request = (String, String, Vec<(String, String)>, Vec<u8>);

async fn read_request(stream: TcpStream) -> Option<(TcpStream, Request)> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).await.ok()?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0usize);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok()?;
    Some((reader.into_inner(), (method, path, headers, body)))
}
