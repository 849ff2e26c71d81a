//! WeCom (企业微信) callbacks: `msg_signature` = SHA-1 of the sorted token, timestamp, nonce
//! and ciphertext; AES-256-CBC with key = base64(EncodingAESKey + "="), IV = the key's first
//! 16 bytes, PKCS#7 padded to 32-byte blocks; plaintext = 16 random bytes, a 4-byte
//! big-endian length, the message, the CorpID (checked).

use aes::cipher::block_padding::NoPadding;
use aes::cipher::{BlockDecryptMut, KeyIvInit};
use base64::alphabet::STANDARD as ALPHABET;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::Engine;
use sha1::{Digest, Sha1};

use super::check_table;
use super::{
    fresh, hex, hex_decode, load_problems, same, var, var_name, BodyFormat, Delivery, Keys, Verifier,
    VerifyError,
};
use crate::config::hooks::{HookConfig, VerifierRules};

pub struct Wecom;

/// WeCom's own keys of `[hooks.NAME]`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct WecomSettings {
    /// The variable holding the callback Token.
    #[serde(default)]
    token_env: Option<String>,
    /// The variable holding the 43-character EncodingAESKey.
    #[serde(default)]
    aes_key_env: Option<String>,
    /// The CorpID (or suite ID) every decrypted message must name.
    #[serde(default)]
    corp_id: Option<String>,
}

impl VerifierRules for Wecom {
    fn name(&self) -> &'static str {
        "wecom"
    }

    fn check_settings(&self, own: &toml::Value) -> Result<(), String> {
        check_table::<WecomSettings>(own)
    }

    fn problems(&self, at: &str, hook: &HookConfig) -> Vec<String> {
        match hook.own::<WecomSettings>() {
            Ok(WecomSettings { token_env: Some(_), aes_key_env: Some(_), corp_id: Some(_) }) => Vec::new(),
            _ => vec![format!("{at}: wecom needs token_env, aes_key_env and corp_id")],
        }
    }

    fn secret_problems(
        &self,
        at: &str,
        hook: &HookConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<String> {
        load_problems(self, at, hook, env)
    }

    fn redelivery_span(&self) -> Option<(chrono::Duration, &'static str)> {
        Some((chrono::Duration::minutes(1), "WeCom retries 3 times within seconds"))
    }
}

impl Verifier for Wecom {
    /// The Token in WeCom's format (at most 32 letters or digits, so no `MIN_KEY_BYTES`
    /// rule: WeCom's own samples are shorter), the 43-character EncodingAESKey (32 bytes).
    fn load(&self, hook: &HookConfig, env: &dyn Fn(&str) -> Option<String>) -> Result<Box<dyn Keys>, String> {
        let own: WecomSettings = hook.own()?;
        let token = var(env, &own.token_env)?;
        if !token_format(token.trim()) {
            return Err(format!("{}: the Token is not 1 to 32 letters or digits", var_name(&own.token_env)));
        }
        let aes = var(env, &own.aes_key_env)?;
        let corp_id = own.corp_id.ok_or("corp_id is not set")?;
        let keys = WecomKeys::new(&token, &aes, &corp_id)
            .map_err(|e| format!("{}: {e}", var_name(&own.aes_key_env)))?;
        Ok(Box::new(keys))
    }

    fn body_format(&self) -> BodyFormat {
        BodyFormat::Xml
    }

    /// `MsgId`, else `FromUserName:CreateTime:Event`.
    fn own_event_id(&self, body: &str) -> Option<String> {
        event_id(body)
    }

    /// WeCom expects an empty answer (or a passive reply) within 5 s.
    fn answers_empty(&self) -> bool {
        true
    }
}

impl Keys for WecomKeys {
    /// An unsigned body without `<Encrypt>` is refused like a bad signature.
    fn open(&self, d: &Delivery<'_>) -> Result<Vec<u8>, VerifyError> {
        let outer = std::str::from_utf8(d.raw).map_err(|_| VerifyError::Malformed("not_utf8"))?;
        let encrypted = xml_field(outer, "Encrypt").ok_or(VerifyError::Unauthorized("missing_encrypt"))?;
        WecomKeys::open(self, d.query, &encrypted, d.now, d.tolerance)
    }

    /// The decrypted `echostr`.
    fn url_check(
        &self,
        query: &CallbackQuery,
        now: i64,
        tolerance: u64,
    ) -> Option<Result<Vec<u8>, VerifyError>> {
        let echostr = query.echostr.clone().unwrap_or_default();
        Some(WecomKeys::open(self, query, &echostr, now, tolerance))
    }
}

/// WeCom's Token: English letters or digits, at most 32 of them.
fn token_format(token: &str) -> bool {
    (1..=32).contains(&token.len()) && token.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// EncodingAESKeys are 43 characters whose last one may carry stray bits.
const LENIENT: GeneralPurpose =
    GeneralPurpose::new(&ALPHABET, GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true));

#[derive(Clone)]
pub struct WecomKeys {
    token: String,
    key: [u8; 32],
    corp_id: String,
}

/// The query of a callback: `msg_signature`, `timestamp`, `nonce` (and `echostr` on GET).
#[derive(Debug, Default, serde::Deserialize)]
pub struct CallbackQuery {
    #[serde(default)]
    pub msg_signature: String,
    #[serde(default)]
    pub timestamp: String,
    #[serde(default)]
    pub nonce: String,
    #[serde(default)]
    pub echostr: Option<String>,
}

impl WecomKeys {
    pub fn new(token: &str, encoding_aes_key: &str, corp_id: &str) -> Result<WecomKeys, String> {
        let bytes = LENIENT
            .decode(format!("{}=", encoding_aes_key.trim()))
            .map_err(|_| "the EncodingAESKey is not 43 base64 characters".to_string())?;
        let key: [u8; 32] =
            bytes.try_into().map_err(|_| "the EncodingAESKey is not 43 base64 characters".to_string())?;
        Ok(WecomKeys { token: token.trim().to_string(), key, corp_id: corp_id.to_string() })
    }

    /// `msg_signature` for these parts.
    pub fn signature(&self, timestamp: &str, nonce: &str, encrypted: &str) -> String {
        let mut parts = [self.token.as_str(), timestamp, nonce, encrypted];
        parts.sort_unstable();
        hex(&Sha1::digest(parts.concat().as_bytes()))
    }

    /// Checks the signature and freshness, decrypts, checks the CorpID; the message.
    pub fn open(
        &self,
        q: &CallbackQuery,
        encrypted: &str,
        now: i64,
        tolerance: u64,
    ) -> Result<Vec<u8>, VerifyError> {
        let expected = self.signature(&q.timestamp, &q.nonce, encrypted);
        let candidate = hex_decode(&q.msg_signature.to_ascii_lowercase()).unwrap_or_default();
        if !same(&hex_decode(&expected).unwrap_or_default(), &candidate) {
            return Err(VerifyError::Unauthorized("signature_mismatch"));
        }
        fresh(&q.timestamp, now, tolerance)?;
        self.decrypt(encrypted)
    }

    fn decrypt(&self, encrypted: &str) -> Result<Vec<u8>, VerifyError> {
        let bad = VerifyError::Malformed("undecryptable");
        let mut buf = STANDARD.decode(encrypted.trim()).map_err(|_| bad.clone())?;
        if buf.is_empty() || buf.len() % 16 != 0 {
            return Err(bad);
        }
        let iv: [u8; 16] = self.key[..16].try_into().map_err(|_| bad.clone())?;
        let plain = cbc::Decryptor::<aes::Aes256>::new(&self.key.into(), &iv.into())
            .decrypt_padded_mut::<NoPadding>(&mut buf)
            .map_err(|_| bad.clone())?;
        // PKCS#7 to 32-byte blocks: N (1..=32) bytes of value N, every one of them checked.
        let pad = usize::from(*plain.last().ok_or(bad.clone())?);
        if pad == 0 || pad > 32 || pad > plain.len() {
            return Err(bad);
        }
        if plain[plain.len() - pad..].iter().any(|&b| usize::from(b) != pad) {
            return Err(bad);
        }
        let plain = &plain[..plain.len() - pad];
        let len_bytes: [u8; 4] = plain.get(16..20).ok_or(bad.clone())?.try_into().map_err(|_| bad.clone())?;
        let len = u32::from_be_bytes(len_bytes) as usize;
        let msg = plain.get(20..20 + len).ok_or(bad.clone())?;
        let corp = plain.get(20 + len..).ok_or(bad)?;
        if corp != self.corp_id.as_bytes() {
            return Err(VerifyError::Unauthorized("corp_id_mismatch"));
        }
        Ok(msg.to_vec())
    }
}

/// The text of `<tag>` in a flat WeCom XML message (CDATA or plain), if present.
pub fn xml_field(xml: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = start + xml[start..].find(&close)?;
    let inner = xml[start..end].trim();
    let inner = inner.strip_prefix("<![CDATA[").and_then(|s| s.strip_suffix("]]>")).unwrap_or(inner);
    Some(inner.to_string()).filter(|s| !s.is_empty())
}

/// The event ID: `MsgId`, else `FromUserName:CreateTime:Event` (events carry no MsgId).
pub fn event_id(xml: &str) -> Option<String> {
    if let Some(id) = xml_field(xml, "MsgId") {
        return Some(id);
    }
    let from = xml_field(xml, "FromUserName")?;
    let created = xml_field(xml, "CreateTime")?;
    let event = xml_field(xml, "Event")?;
    Some(format!("{from}:{created}:{event}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aes::cipher::BlockEncryptMut;

    const AES_KEY: &str = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C";

    /// Encrypts `msg` as WeCom does, with `padding` as the last bytes instead of PKCS#7's.
    fn sealed(keys: &WecomKeys, msg: &[u8], padding: impl Fn(usize) -> Vec<u8>) -> String {
        let mut plain = b"0123456789abcdef".to_vec();
        plain.extend_from_slice(&(msg.len() as u32).to_be_bytes());
        plain.extend_from_slice(msg);
        plain.extend_from_slice(keys.corp_id.as_bytes());
        let n = 32 - plain.len() % 32;
        plain.extend(padding(n));
        let iv: [u8; 16] = keys.key[..16].try_into().unwrap();
        let len = plain.len();
        let out = cbc::Encryptor::<aes::Aes256>::new(&keys.key.into(), &iv.into())
            .encrypt_padded_mut::<NoPadding>(&mut plain, len)
            .unwrap()
            .to_vec();
        STANDARD.encode(out)
    }

    /// Issue 21: only the last padding byte was read, so `AA…AA 0N` passed as padding.
    #[test]
    fn forged_padding_whose_last_byte_alone_is_right_is_refused() {
        let keys = WecomKeys::new("tok", AES_KEY, "wwcorp").unwrap();
        let msg = b"<xml><MsgId>1</MsgId></xml>";
        let good = sealed(&keys, msg, |n| vec![n as u8; n]);
        assert_eq!(keys.decrypt(&good).unwrap(), msg);
        let forged = sealed(&keys, msg, |n| {
            let mut p = vec![0xAA; n - 1];
            p.push(n as u8);
            p
        });
        assert!(matches!(keys.decrypt(&forged), Err(VerifyError::Malformed(_))));
        // A full block of padding (32 bytes of 32) is PKCS#7 too.
        let exact = b"x".repeat(32 - (16 + 4 + "wwcorp".len()) % 32);
        let whole = sealed(&keys, &exact, |n| vec![n as u8; n]);
        assert_eq!(keys.decrypt(&whole).unwrap(), exact);
    }

    #[test]
    fn xml_fields_and_event_ids() {
        let msg = "<xml><FromUserName><![CDATA[zhangsan]]></FromUserName><CreateTime>1409659813</CreateTime>\
                   <MsgType><![CDATA[event]]></MsgType><Event><![CDATA[enter_agent]]></Event></xml>";
        assert_eq!(event_id(msg).as_deref(), Some("zhangsan:1409659813:enter_agent"));
        let text = "<xml><MsgId>1234567890123456</MsgId><Content><![CDATA[hi]]></Content></xml>";
        assert_eq!(event_id(text).as_deref(), Some("1234567890123456"));
        assert_eq!(event_id("<xml><Content>x</Content></xml>"), None);
    }
}
