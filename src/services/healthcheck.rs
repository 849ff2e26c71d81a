//! `onceform healthcheck [--ready] [--url URL]`: asks a running server for `/healthz` (it
//! answers) or `/readyz` (it could store a submission now) and succeeds on a 200, so that a
//! container's `HEALTHCHECK` needs no curl in the image. One plain HTTP/1.1 GET over a
//! `TcpStream`, with a deadline on the connect and on the answer; only the status line is
//! read.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// The liveness path (`web::http::ops`).
pub const HEALTHZ: &str = "/healthz";
/// The readiness path (`web::http::ops`).
pub const READYZ: &str = "/readyz";

/// How long the connect, and then the whole answer, may take.
const DEADLINE: Duration = Duration::from_secs(3);

/// Where to ask: a host (name or address), a port, and the path before `/healthz`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    host: String,
    port: u16,
    prefix: String,
}

impl Target {
    /// The server bound at `bind` (`server.bind`, `ONCEFORM_BIND`), reached on loopback when
    /// it listens on every address.
    pub fn bound(bind: SocketAddr) -> Result<Target, String> {
        if bind.port() == 0 {
            return Err(format!("server.bind {bind} picks a free port: pass --url with the one it picked"));
        }
        let ip = match bind.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        let host = match ip {
            IpAddr::V6(ip) => format!("[{ip}]"),
            ip => ip.to_string(),
        };
        Ok(Target { host, port: bind.port(), prefix: String::new() })
    }

    /// `http://host:port[/prefix]` (a reverse proxy's path prefix is kept).
    pub fn url(url: &str) -> Result<Target, String> {
        let parsed = url::Url::parse(url).map_err(|e| format!("--url {url}: {e}"))?;
        if parsed.scheme() != "http" {
            return Err(format!("--url {url}: only http:// (the server's own listener)"));
        }
        let host = match parsed.host() {
            Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
            Some(h) => h.to_string(),
            None => return Err(format!("--url {url}: no host")),
        };
        let port = parsed.port_or_known_default().unwrap_or(80);
        Ok(Target { host, port, prefix: parsed.path().trim_end_matches('/').to_string() })
    }
}

/// Asks `target` for liveness (or readiness); `Ok` with the status line on a 200.
pub fn check(target: &Target, ready: bool) -> Result<String, String> {
    let path = format!("{}{}", target.prefix, if ready { READYZ } else { HEALTHZ });
    let shown = format!("http://{}:{}{path}", target.host, target.port);
    let status = get(target, &path).map_err(|e| format!("{shown}: {e}"))?;
    match status.split(' ').nth(1) {
        Some("200") => Ok(format!("{shown}: {status}")),
        _ => Err(format!("{shown}: {status}")),
    }
}

/// The status line of `GET path`.
fn get(target: &Target, path: &str) -> std::io::Result<String> {
    let host = target.host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = (host, target.port).to_socket_addrs()?.collect();
    let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, "no address");
    let mut stream = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, DEADLINE) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = e,
        }
    }
    let mut stream = stream.ok_or(last)?;
    let started = Instant::now();
    stream.set_write_timeout(Some(DEADLINE))?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {}:{}\r\nUser-Agent: onceform-healthcheck\r\nConnection: close\r\n\r\n",
        target.host, target.port
    );
    stream.write_all(request.as_bytes())?;
    let mut head = Vec::new();
    let mut buf = [0; 512];
    while !head.windows(2).any(|w| w == b"\r\n") && head.len() < 4096 {
        let left = DEADLINE.checked_sub(started.elapsed()).filter(|d| !d.is_zero());
        let left =
            left.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer in time"))?;
        stream.set_read_timeout(Some(left))?;
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&head);
    let line = text.split("\r\n").next().unwrap_or_default().trim();
    if !line.starts_with("HTTP/") {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "not an HTTP answer"));
    }
    Ok(line.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unspecified_bind_is_asked_on_loopback() {
        let t = Target::bound("0.0.0.0:8080".parse().unwrap()).unwrap();
        assert_eq!((t.host.as_str(), t.port), ("127.0.0.1", 8080));
        let t = Target::bound("[::]:9000".parse().unwrap()).unwrap();
        assert_eq!(t.host, "[::1]");
        let t = Target::bound("10.0.0.5:80".parse().unwrap()).unwrap();
        assert_eq!(t.host, "10.0.0.5");
        assert!(Target::bound("127.0.0.1:0".parse().unwrap()).unwrap_err().contains("--url"));
    }

    #[test]
    fn a_url_names_host_port_and_prefix() {
        let t = Target::url("http://onceform:8080/forms/").unwrap();
        assert_eq!(t, Target { host: "onceform".into(), port: 8080, prefix: "/forms".into() });
        assert_eq!(Target::url("http://[::1]").unwrap().host, "[::1]");
        assert!(Target::url("https://x").unwrap_err().contains("only http://"));
    }

    #[test]
    fn nothing_listening_is_a_failure_naming_the_address() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let e = check(&Target::bound(SocketAddr::from(([127, 0, 0, 1], port))).unwrap(), true).unwrap_err();
        assert!(e.starts_with(&format!("http://127.0.0.1:{port}/readyz: ")), "{e}");
    }
}
