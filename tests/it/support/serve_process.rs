//! Real `onceform serve` child processes on port 0 sharing one database, killed when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

pub struct ServeProcess {
    pub child: Child,
    pub address: String,
}

impl ServeProcess {
    /// `onceform serve` on `database_url`, port 0, no rate limit, in a fresh working
    /// directory (relative paths in a `--config` must not rely on the test's); add arguments before
    /// `serve` with `command(url, &["--config", path])` and environment with `.env(…)`.
    pub fn command(database_url: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_onceform"));
        cmd.args(args)
            .arg("serve")
            .env("ONCEFORM_DATABASE_URL", database_url)
            .env("ONCEFORM_BIND", "127.0.0.1:0")
            .env("ONCEFORM_RATE_LIMIT", "off")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // Its ./data (mail and lead files, the secret) is a directory of its own, never the
        // working directory's; a caller may choose another with `current_dir`.
        let dir = std::env::temp_dir().join(format!("onceform-serve-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        cmd.current_dir(dir);
        cmd
    }

    /// `n` processes started at once, each returned once it listens.
    pub fn start_many(database_url: &str, n: usize) -> Vec<ServeProcess> {
        // One working directory for all: they share its ./data/secret, as processes of one
        // deployment share their secret.
        let dir = std::env::temp_dir().join(format!("onceform-serve-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let children: Vec<Child> =
            (0..n).map(|_| Self::command(database_url, &[]).current_dir(&dir).spawn().unwrap()).collect();
        children.into_iter().map(Self::ready).collect()
    }

    /// Starts `cmd` and waits until it prints the address it listens on.
    pub fn start(mut cmd: Command) -> ServeProcess {
        Self::ready(cmd.spawn().unwrap())
    }

    fn ready(mut child: Child) -> ServeProcess {
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        let address = line.trim().rsplit(' ').next().unwrap().to_string();
        assert!(address.starts_with("http://127.0.0.1:"), "unexpected first line: {line:?}");
        ServeProcess { child, address }
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
