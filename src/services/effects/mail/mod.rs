//! Sending mail: SMTP (lettre, pooled, TLS/STARTTLS and auth from the URL) or `.eml` files.

pub mod attach;
mod compose;
mod effect;
pub mod template;

pub use attach::{Attach, Attached, MailFile};
pub use compose::{data, visitor};
pub use effect::EmailEffect;

use std::path::PathBuf;
use std::time::Duration;

use lettre::message::header::{ContentType, Header, HeaderName, HeaderValue};
use lettre::message::{Attachment, Mailbox, MultiPart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use super::{Outcome, Report};
use crate::base::private_files;
use crate::config::SmtpConfig;
use template::Rendered;

enum Transport {
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
    /// One `.eml` per effect key (`eml_name`): sending twice writes the same file.
    Files(PathBuf),
}

pub struct Mailer {
    transport: Transport,
    pub from: Mailbox,
    timeout: Duration,
}

/// Who gets one message.
pub struct Envelope {
    pub to: Vec<Mailbox>,
    pub reply_to: Option<Mailbox>,
}

impl Mailer {
    pub fn new(config: &SmtpConfig, timeout: Duration) -> anyhow::Result<Mailer> {
        let from: Mailbox = config
            .from
            .parse()
            .map_err(|e| anyhow::anyhow!("smtp.from `{}` is not a mailbox: {e}", config.from))?;
        let transport = match &config.url {
            Some(url) => Transport::Smtp(
                AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
                    .map_err(|e| anyhow::anyhow!("smtp.url is not usable: {e}"))?
                    .timeout(Some(timeout))
                    .build(),
            ),
            None => Transport::Files(PathBuf::from(&config.mail_dir)),
        };
        Ok(Mailer { transport, from, timeout })
    }

    /// Writing files is idempotent (one file per effect key); SMTP is not.
    pub fn idempotent(&self) -> bool {
        matches!(self.transport, Transport::Files(_))
    }

    /// Builds and sends one message whose Message-ID derives from `effect_key`.
    pub async fn send(&self, effect_key: &str, envelope: Envelope, content: Rendered) -> Report {
        self.send_with(effect_key, envelope, content, Vec::new()).await
    }

    /// `send`, the message carrying `files` as attachments.
    pub async fn send_with(
        &self,
        effect_key: &str,
        envelope: Envelope,
        content: Rendered,
        files: Vec<MailFile>,
    ) -> Report {
        let message = match self.build(effect_key, envelope, content, files) {
            Ok(m) => m,
            Err(class) => return Report::failed(Outcome::Permanent, class),
        };
        match &self.transport {
            Transport::Files(dir) => {
                let (dir, key, bytes) = (dir.clone(), effect_key.to_string(), message.formatted());
                tokio::task::spawn_blocking(move || write_eml(&dir, &key, &bytes))
                    .await
                    .unwrap_or_else(|_| Report::failed(Outcome::Transient { retry_after: None }, "file_io"))
            }
            Transport::Smtp(smtp) => match tokio::time::timeout(self.timeout, smtp.send(message)).await {
                Err(_) => Report::failed(Outcome::Ambiguous, "timeout"),
                Ok(Ok(response)) => {
                    let text = response.message().collect::<Vec<_>>().join(" ");
                    Report::sent(if text.is_empty() { message_id(effect_key) } else { text })
                        .with_smtp(Some(u16::from(response.code())))
                }
                Ok(Err(e)) => smtp_error(&e),
            },
        }
    }

    fn build(
        &self,
        effect_key: &str,
        envelope: Envelope,
        content: Rendered,
        files: Vec<MailFile>,
    ) -> Result<Message, &'static str> {
        let mut builder = Message::builder()
            .from(self.from.clone())
            .header(ContentLanguage(content.language.tag()))
            .subject(content.subject)
            .message_id(Some(message_id(effect_key)));
        if envelope.to.is_empty() {
            return Err("no_recipient");
        }
        for to in envelope.to {
            builder = builder.to(to);
        }
        if let Some(reply_to) = envelope.reply_to {
            builder = builder.reply_to(reply_to);
        }
        let body = MultiPart::alternative_plain_html(content.text, content.html);
        if files.is_empty() {
            return builder.multipart(body).map_err(|_| "message_build");
        }
        // multipart/mixed: the text and HTML parts, then one part per file.
        let mut mixed = MultiPart::mixed().multipart(body);
        for file in files {
            let kind = ContentType::parse(&file.content_type).unwrap_or_else(|_| {
                ContentType::parse("application/octet-stream").unwrap_or(ContentType::TEXT_PLAIN)
            });
            mixed = mixed.singlepart(Attachment::new(file.name).body(file.bytes, kind));
        }
        builder.multipart(mixed).map_err(|_| "message_build")
    }
}

/// `Content-Language: zh-TW`: the language of the message's built-in texts.
#[derive(Clone)]
struct ContentLanguage(&'static str);

impl Header for ContentLanguage {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("Content-Language")
    }

    fn parse(s: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        crate::base::i18n::Locale::parse(s)
            .map(|l| ContentLanguage(l.tag()))
            .ok_or_else(|| "not a shipped locale".into())
    }

    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), self.0.to_string())
    }
}

/// Deterministic per effect, so a provider or a reader can tell a resend from a new message.
/// `:` becomes `.`; anything else but letters, digits, `-` and `_` (a webhook's event ID
/// may hold spaces, `<`, `>` or `@`) is percent-encoded, so the ID stays one atom.
pub fn message_id(effect_key: &str) -> String {
    let mut local = String::with_capacity(effect_key.len());
    for b in effect_key.bytes() {
        match b {
            b':' => local.push('.'),
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => local.push(b as char),
            _ => local.push_str(&format!("%{b:02X}")),
        }
    }
    format!("<{local}@onceform>")
}

/// SMTP 4xx transient, 5xx permanent; refused connections transient; anything that broke
/// off mid-conversation (possibly after DATA) ambiguous.
fn smtp_error(e: &lettre::transport::smtp::Error) -> Report {
    let code = e.status().map(u16::from);
    if e.is_transient() {
        return Report::failed(
            Outcome::Transient { retry_after: None },
            format!("smtp_{}", code.unwrap_or(400)),
        )
        .with_smtp(code);
    }
    if e.is_permanent() {
        return Report::failed(Outcome::Permanent, format!("smtp_{}", code.unwrap_or(500))).with_smtp(code);
    }
    if refused(e) {
        return Report::failed(Outcome::Transient { retry_after: None }, "connect");
    }
    let class = if e.is_timeout() { "timeout" } else { "connection_dropped" };
    Report::failed(Outcome::Ambiguous, class)
}

fn refused(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = e.source();
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return matches!(io.kind(), std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound);
        }
        source = s.source();
    }
    false
}

/// The `.eml` file of an effect key: the file CRM's encoding (`private_files::safe_name`), so two keys
/// never share a file (`coll:1` and `coll_1` once did).
pub fn eml_name(effect_key: &str) -> String {
    crate::base::private_files::safe_name(effect_key, "eml")
}

/// The name the file got before issue 21: `:` as `_` (erasure looks for both).
pub fn legacy_eml_name(effect_key: &str) -> String {
    format!("{}.eml", effect_key.replace(':', "_"))
}

/// Writes `eml_name(KEY)` through a temporary file and a rename, readable by the server's
/// user only; blocking (run on the blocking pool).
fn write_eml(dir: &std::path::Path, effect_key: &str, message: &[u8]) -> Report {
    let name = eml_name(effect_key);
    let result = private_files::create_dir_all(dir).and_then(|()| {
        let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
        private_files::write_new(&tmp, message)?;
        std::fs::rename(&tmp, dir.join(&name))
    });
    match result {
        Ok(()) => Report::sent(name),
        Err(_) => Report::failed(Outcome::Transient { retry_after: None }, "file_io"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str) -> Rendered {
        Rendered {
            language: crate::base::i18n::Locale::En,
            subject: "s".into(),
            text: text.into(),
            html: format!("<p>{text}</p>"),
        }
    }

    #[test]
    fn a_message_id_is_one_atom_whatever_the_event_id_holds() {
        assert_eq!(message_id("0193-ab:confirmation_email:0"), "<0193-ab.confirmation_email.0@onceform>");
        assert_eq!(message_id("hd:tell:a b>@<x:0"), "<hd.tell.a%20b%3E%40%3Cx.0@onceform>");
    }

    /// Issue 21: `coll:1` and `coll_1` both ended SENT with one file between them.
    #[tokio::test]
    async fn two_effect_keys_that_differ_by_colon_and_underscore_never_share_an_eml_file() {
        let dir = std::env::temp_dir().join(format!("onceform-eml-{}", uuid::Uuid::new_v4().simple()));
        let config = SmtpConfig {
            url: None,
            from: "onceform <noreply@localhost>".into(),
            mail_dir: dir.to_string_lossy().into_owned(),
            ..SmtpConfig::default()
        };
        let mailer = Mailer::new(&config, Duration::from_secs(5)).unwrap();
        let to = || Envelope { to: vec!["a@example.com".parse().unwrap()], reply_to: None };
        let keys = ["coll:1", "coll_1", "coll%3A1", "../coll"];
        let mut refs = Vec::new();
        for key in keys {
            let sent = mailer.send(key, to(), message(&format!("body of {key}"))).await;
            let Outcome::Sent { provider_ref } = sent.outcome else { panic!("{key}: {sent:?}") };
            refs.push(provider_ref);
        }
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names.len(), keys.len(), "one file per key: {names:?}");
        for (key, name) in keys.iter().zip(&refs) {
            assert_eq!(*name, eml_name(key));
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            assert!(text.contains(&format!("body of {key}")), "{name} holds its own message");
        }
        assert!(!names.iter().any(|n| n.contains('/') || n.starts_with('.')), "{names:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
