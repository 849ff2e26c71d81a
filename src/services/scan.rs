//! Malware scanning of uploaded files by a ClamAV daemon (clamd) over its INSTREAM protocol.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

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

#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// clamd could not be reached or did not answer in time (connect, I/O, timeout).
    #[error("clamd unavailable: {0}")]
    Unavailable(String),
    /// clamd answered something other than a verdict (e.g. `INSTREAM size limit exceeded`).
    #[error("clamd protocol error: {0}")]
    Protocol(String),
}

trait Conn: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Conn for T {}

fn unavailable(what: &str) -> impl FnOnce(std::io::Error) -> ScanError + '_ {
    move |e| ScanError::Unavailable(format!("{what}: {e}"))
}

/// A clamd client; each call opens its own connection.
#[derive(Debug, Clone)]
pub struct Scanner {
    addr: ScannerAddr,
    timeout: Duration,
}

impl Scanner {
    /// `timeout` bounds each call as a whole (connect, every write and read).
    pub fn new(addr: ScannerAddr, timeout: Duration) -> Scanner {
        Scanner { addr, timeout }
    }

    /// Streams the file at `path` to clamd in 64 KiB chunks and returns its verdict.
    pub async fn scan_file(&self, path: &Path) -> Result<Verdict, ScanError> {
        let mut file = tokio::fs::File::open(path)
            .await
            .map_err(|e| ScanError::Unavailable(format!("opening {}: {e}", path.display())))?;
        self.within(async {
            let mut conn = self.connect().await?;
            // If clamd stops reading (it closes early on a size limit), its reply says why.
            if let Err(e) = send_stream(&mut conn, &mut file).await {
                return match read_reply(&mut conn).await {
                    Ok(reply) if !reply.is_empty() => verdict(&reply),
                    _ => Err(e),
                };
            }
            verdict(&read_reply(&mut conn).await?)
        })
        .await
    }

    /// `PING`: Ok when clamd answers `PONG`.
    pub async fn ping(&self) -> Result<(), ScanError> {
        self.within(async {
            let mut conn = self.connect().await?;
            conn.write_all(b"zPING\0").await.map_err(unavailable("sending PING"))?;
            match read_reply(&mut conn).await?.as_str() {
                "PONG" => Ok(()),
                other => Err(ScanError::Protocol(format!("PING answered {other:?}"))),
            }
        })
        .await
    }

    async fn within<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, ScanError>>,
    ) -> Result<T, ScanError> {
        tokio::time::timeout(self.timeout, call)
            .await
            .unwrap_or_else(|_| Err(ScanError::Unavailable(format!("no answer within {:?}", self.timeout))))
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
    conn.write_all(b"zINSTREAM\0").await.map_err(unavailable("sending INSTREAM"))?;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = file.read(&mut buf).await.map_err(unavailable("reading the file"))?;
        let len = u32::try_from(n).map_err(|_| ScanError::Protocol("chunk too long".into()))?;
        conn.write_all(&len.to_be_bytes()).await.map_err(unavailable("sending a chunk"))?;
        if n == 0 {
            return conn.flush().await.map_err(unavailable("sending the stream"));
        }
        conn.write_all(&buf[..n]).await.map_err(unavailable("sending a chunk"))?;
    }
}

/// The reply up to its terminating NUL (or the end of the stream), at most 4 KiB.
async fn read_reply(conn: &mut dyn Conn) -> Result<String, ScanError> {
    let mut reply = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        let n = conn.read(&mut buf).await.map_err(unavailable("reading the reply"))?;
        if n == 0 && reply.is_empty() {
            return Err(ScanError::Unavailable("clamd closed the connection without a reply".into()));
        }
        let end = buf[..n].iter().position(|&b| b == 0);
        reply.extend_from_slice(&buf[..end.unwrap_or(n)]);
        if reply.len() > MAX_REPLY {
            return Err(ScanError::Protocol(format!("reply longer than {MAX_REPLY} bytes")));
        }
        if end.is_some() || n == 0 {
            return Ok(String::from_utf8_lossy(&reply).trim_end().to_string());
        }
    }
}

/// The verdict in an INSTREAM reply: `stream: OK` or `stream: NAME FOUND`.
fn verdict(reply: &str) -> Result<Verdict, ScanError> {
    let Some(rest) = reply.strip_prefix("stream: ") else {
        return Err(ScanError::Protocol(bounded(reply)));
    };
    if rest == "OK" {
        return Ok(Verdict::Clean);
    }
    match rest.strip_suffix(" FOUND") {
        Some(name) if !name.trim().is_empty() => Ok(Verdict::Malware(bounded(name.trim()))),
        _ => Err(ScanError::Protocol(bounded(reply))),
    }
}

fn bounded(s: &str) -> String {
    s.chars().take(MAX_NAME).collect()
}

#[cfg(test)]
mod tests;
