//! A real ClamAV daemon (clamd) of a test's own: a fresh directory with its configuration,
//! socket, log and a database of its own: hash signatures (SHA-256) of the EICAR test file and
//! of whatever else the test names.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// The name clamd reports for EICAR: the database's name plus `.UNOFFICIAL`, which clamd
/// appends to every signature of a database that is not signed by ClamAV.
pub const EICAR_SIGNATURE: &str = "Eicar-Test-Signature.UNOFFICIAL";

/// The standard EICAR anti-virus test file (68 bytes), put together at run time so that this
/// source file is no test virus itself.
pub fn eicar() -> Vec<u8> {
    [r"X5O!P%@AP[4\PZX54(P^)7CC)7}$", "EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*"].concat().into_bytes()
}

/// The clamd binary: `clamd` on PATH, else /usr/sbin/clamd (Debian's clamav-daemon).
fn binary() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("clamd"))
        .chain([PathBuf::from("/usr/sbin/clamd")])
        .find(|p| p.is_file())
        .expect("clamd (Debian package clamav-daemon; ./test.sh installs it)")
}

/// A unix: address where nothing listens (its directory does not exist).
pub fn down_addr() -> String {
    let dir = std::env::temp_dir().join(format!("onceform-clamd-down-{}", uuid::Uuid::new_v4().simple()));
    format!("unix:{}", dir.join("clamd.sock").display())
}

pub struct Clamd {
    child: Child,
    dir: PathBuf,
    /// How long clamd took until it answered PING.
    pub startup: Duration,
}

impl Clamd {
    pub fn start() -> Clamd {
        Clamd::start_with("", &[])
    }

    /// With `extra` lines appended to its clamd.conf (e.g. `StreamMaxLength 1M`) and a hash
    /// signature `NAME` for each (NAME, file contents) of `signatures` besides EICAR's.
    pub fn start_with(extra: &str, signatures: &[(&str, &[u8])]) -> Clamd {
        let dir = std::env::temp_dir().join(format!("onceform-clamd-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(dir.join("db")).unwrap();
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        let eicar = eicar();
        let database: String = [("Eicar-Test-Signature", eicar.as_slice())]
            .iter()
            .chain(signatures)
            .map(|(name, bytes)| format!("{:x}:{}:{name}\n", Sha256::digest(bytes), bytes.len()))
            .collect();
        std::fs::write(dir.join("db/test.hsb"), database).unwrap();
        let at = |name: &str| dir.join(name).display().to_string();
        let conf = format!(
            "Foreground yes\nLocalSocket {}\nDatabaseDirectory {}\nPidFile {}\nTemporaryDirectory {}\n\
             LogFile {}\n{extra}\n",
            at("clamd.sock"),
            at("db"),
            at("clamd.pid"),
            at("tmp"),
            at("clamd.log"),
        );
        std::fs::write(dir.join("clamd.conf"), conf).unwrap();
        let started = Instant::now();
        let child = Command::new(binary())
            .arg(format!("--config-file={}", at("clamd.conf")))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("clamd.stderr")).unwrap())
            .spawn()
            .unwrap();
        let mut clamd = Clamd { child, dir, startup: Duration::ZERO };
        while !clamd.pong() {
            let log = || std::fs::read_to_string(clamd.dir.join("clamd.stderr")).unwrap_or_default();
            if let Some(status) = clamd.child.try_wait().unwrap() {
                panic!("clamd exited ({status}) before answering PING:\n{}", log());
            }
            assert!(started.elapsed() < Duration::from_secs(60), "clamd silent for 60 s:\n{}", log());
            std::thread::sleep(Duration::from_millis(20));
        }
        clamd.startup = started.elapsed();
        clamd
    }

    fn pong(&self) -> bool {
        let Ok(mut socket) = UnixStream::connect(self.socket()) else { return false };
        let _ = socket.set_read_timeout(Some(Duration::from_secs(5)));
        let mut reply = [0u8; 5];
        socket.write_all(b"zPING\0").is_ok() && socket.read_exact(&mut reply).is_ok() && &reply == b"PONG\0"
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.join("clamd.sock")
    }

    /// `unix:/…/clamd.sock`, as `ONCEFORM_CLAMD` gives it.
    pub fn addr(&self) -> String {
        format!("unix:{}", self.socket().display())
    }

    /// Writes a file of `bytes` into this daemon's directory; its path.
    pub fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

impl Drop for Clamd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
