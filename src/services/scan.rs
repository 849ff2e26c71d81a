//! Malware scanning of uploaded files by a ClamAV daemon (clamd) over its INSTREAM protocol.
//! A scan ends three ways: a verdict (clean or malware), the file could not be scanned
//! (clamd was reached but gave no verdict on it), or clamd could not be reached at all.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

/// Bytes of the file sent per INSTREAM chunk.
const CHUNK: usize = 64 * 1024;
/// The longest reply read from clamd.
const MAX_REPLY: usize = 4096;
/// The longest signature name kept, in characters.
const MAX_NAME: usize = 200;

/// Where clamd listens: `ONCEFORM_CLAMD` = `unix:/path` or `tcp:host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScannerAddr {
    Unix(PathBuf),
    Tcp(String),
}

impl ScannerAddr {
    pub fn parse(s: &str) -> Result<ScannerAddr, String> {
        let wanted = "expected unix:/path/to/clamd.sock or tcp:host:port";
        if let Some(path) = s.strip_prefix("unix:") {
            if !path.starts_with('/') {
                return Err(format!("clamd address {s:?}: the socket path must be absolute ({wanted})"));
            }
            return Ok(ScannerAddr::Unix(PathBuf::from(path)));
        }
        if let Some(host_port) = s.strip_prefix("tcp:") {
            let ok = host_port.rsplit_once(':').is_some_and(|(host, port)| {
                !host.is_empty() && !host.contains('/') && port.parse::<u16>().is_ok_and(|p| p > 0)
            });
            if !ok {
                return Err(format!("clamd address {s:?}: {host_port:?} is not a host:port ({wanted})"));
            }
            return Ok(ScannerAddr::Tcp(host_port.to_string()));
        }
        Err(format!("clamd address {s:?}: {wanted}"))
    }
}

/// What clamd found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Clean,
    /// The signature's name (at most 200 characters).
    Malware(String),
}

/// Why a file has no verdict: the scanner is down, or it could not scan this file. Only the
/// first is "scanner down" (the form's `when_scanner_down`); a file clamd could not scan is
/// never delivered unscanned.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// No connection to clamd: not configured, no socket, refused, or not connected within
    /// the deadline.
    #[error("clamd unavailable: {0}")]
    Unavailable(String),
    /// clamd was reached but gave no verdict on this file: an error reply (`INSTREAM size
    /// limit exceeded. ERROR`), a reply that is no verdict, no reply within the deadline or
    /// the connection closed before one; or the file could not be read.
    #[error("clamd could not scan the file: {0}")]
    Unscannable(String),
}

trait Conn: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Conn for T {}

fn unscannable(what: &str) -> impl FnOnce(std::io::Error) -> ScanError + '_ {
    move |e| ScanError::Unscannable(format!("{what}: {e}"))
}

/// A clamd client; each call opens its own connection.
#[derive(Debug, Clone)]
pub struct Scanner {
    addr: ScannerAddr,
    timeout: Duration,
}

impl Scanner {
    /// `timeout` bounds each call as a whole (connect, every write and read): not connected
    /// by then, clamd is `Unavailable`; connected but no verdict by then, the file is
    /// `Unscannable`.
    pub fn new(addr: ScannerAddr, timeout: Duration) -> Scanner {
        Scanner { addr, timeout }
    }

    /// Streams the file at `path` to clamd in 64 KiB chunks and returns its verdict.
    pub async fn scan_file(&self, path: &Path) -> Result<Verdict, ScanError> {
        let mut file = tokio::fs::File::open(path)
            .await
            .map_err(|e| ScanError::Unscannable(format!("opening {}: {e}", path.display())))?;
        let deadline = Instant::now() + self.timeout;
        let mut conn = self.connect_by(deadline).await?;
        let scan = async {
            // If clamd stops reading (it closes early on a size limit), its reply says why.
            if let Err(e) = send_stream(&mut conn, &mut file).await {
                return match read_reply(&mut conn).await {
                    Ok(reply) if !reply.is_empty() => verdict(&reply),
                    _ => Err(e),
                };
            }
            verdict(&read_reply(&mut conn).await?)
        };
        tokio::time::timeout_at(deadline, scan)
            .await
            .unwrap_or_else(|_| Err(ScanError::Unscannable(format!("no verdict within {:?}", self.timeout))))
    }

    /// `PING`: Ok when clamd answers `PONG`; any other answer, or none in time, is
    /// `Unavailable` (no working clamd).
    pub async fn ping(&self) -> Result<(), ScanError> {
        let deadline = Instant::now() + self.timeout;
        let mut conn = self.connect_by(deadline).await?;
        let ping = async {
            conn.write_all(b"zPING\0").await.map_err(|e| format!("sending PING: {e}"))?;
            read_reply(&mut conn).await.map_err(|(ScanError::Unavailable(e) | ScanError::Unscannable(e))| e)
        };
        match tokio::time::timeout_at(deadline, ping).await {
            Ok(Ok(reply)) if reply == "PONG" => Ok(()),
            Ok(Ok(other)) => Err(ScanError::Unavailable(format!("PING answered {other:?}"))),
            Ok(Err(e)) => Err(ScanError::Unavailable(e)),
            Err(_) => Err(ScanError::Unavailable(format!("no answer within {:?}", self.timeout))),
        }
    }

    /// A connection to clamd made by `deadline`, else `Unavailable`: the scanner is down.
    async fn connect_by(&self, deadline: Instant) -> Result<Box<dyn Conn>, ScanError> {
        tokio::time::timeout_at(deadline, self.connect()).await.unwrap_or_else(|_| {
            Err(ScanError::Unavailable(format!("not connected within {:?}", self.timeout)))
        })
    }

    async fn connect(&self) -> Result<Box<dyn Conn>, ScanError> {
        Ok(match &self.addr {
            ScannerAddr::Unix(path) => Box::new(
                tokio::net::UnixStream::connect(path)
                    .await
                    .map_err(|e| ScanError::Unavailable(format!("connecting to {}: {e}", path.display())))?,
            ),
            ScannerAddr::Tcp(host_port) => Box::new(
                tokio::net::TcpStream::connect(host_port.as_str())
                    .await
                    .map_err(|e| ScanError::Unavailable(format!("connecting to {host_port}: {e}")))?,
            ),
        })
    }
}

/// `zINSTREAM\0`, then chunks each prefixed by its length (4 bytes, big-endian), then 0.
async fn send_stream(conn: &mut dyn Conn, file: &mut tokio::fs::File) -> Result<(), ScanError> {
    conn.write_all(b"zINSTREAM\0").await.map_err(unscannable("sending INSTREAM"))?;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = file.read(&mut buf).await.map_err(unscannable("reading the file"))?;
        let len = u32::try_from(n).map_err(|_| ScanError::Unscannable("chunk too long".into()))?;
        conn.write_all(&len.to_be_bytes()).await.map_err(unscannable("sending a chunk"))?;
        if n == 0 {
            return conn.flush().await.map_err(unscannable("sending the stream"));
        }
        conn.write_all(&buf[..n]).await.map_err(unscannable("sending a chunk"))?;
    }
}

/// The reply up to its terminating NUL (or the end of the stream), at most 4 KiB.
async fn read_reply(conn: &mut dyn Conn) -> Result<String, ScanError> {
    let mut reply = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        let n = conn.read(&mut buf).await.map_err(unscannable("reading the reply"))?;
        if n == 0 && reply.is_empty() {
            return Err(ScanError::Unscannable("clamd closed the connection without a reply".into()));
        }
        let end = buf[..n].iter().position(|&b| b == 0);
        reply.extend_from_slice(&buf[..end.unwrap_or(n)]);
        if reply.len() > MAX_REPLY {
            return Err(ScanError::Unscannable(format!("reply longer than {MAX_REPLY} bytes")));
        }
        if end.is_some() || n == 0 {
            return Ok(String::from_utf8_lossy(&reply).trim_end().to_string());
        }
    }
}

/// The verdict in an INSTREAM reply: `stream: OK` or `stream: NAME FOUND`; anything else
/// (`... ERROR`) is no verdict on this file.
fn verdict(reply: &str) -> Result<Verdict, ScanError> {
    let Some(rest) = reply.strip_prefix("stream: ") else {
        return Err(ScanError::Unscannable(bounded(reply)));
    };
    if rest == "OK" {
        return Ok(Verdict::Clean);
    }
    match rest.strip_suffix(" FOUND") {
        Some(name) if !name.trim().is_empty() => Ok(Verdict::Malware(bounded(name.trim()))),
        _ => Err(ScanError::Unscannable(bounded(reply))),
    }
}

fn bounded(s: &str) -> String {
    s.chars().take(MAX_NAME).collect()
}

#[cfg(test)]
mod tests;
