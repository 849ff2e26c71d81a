//! ALTCHA, a self-hosted proof of work: a challenge is `SHA-256(salt + number)` for a
//! secret number below `max_number`, signed with the server secret and expiring; the client
//! finds the number and posts it back (base64 JSON in the `altcha` field).

use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{hex, SpamReason};
use crate::config::CaptchaConfig;
use crate::secret::Secret;

const PURPOSE: &str = "altcha";

/// A challenge as the ALTCHA widget expects it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Challenge {
    pub algorithm: String,
    pub challenge: String,
    pub maxnumber: u64,
    pub salt: String,
    pub signature: String,
}

/// A solution as the widget posts it (base64 of this JSON).
#[derive(Debug, Deserialize, Serialize)]
pub struct Solution {
    pub algorithm: String,
    pub challenge: String,
    pub number: u64,
    pub salt: String,
    pub signature: String,
}

/// A fresh challenge that expires `config.expires_seconds` after `now`.
pub fn challenge(secret: &Secret, config: &CaptchaConfig, now: u64) -> Challenge {
    let number = fastrand::u64(0..=config.max_number);
    let salt = format!("{}?expires={}", uuid::Uuid::new_v4().simple(), now + config.expires_seconds);
    let challenge = hex(&Sha256::digest(format!("{salt}{number}").as_bytes()));
    let signature = hex(&secret.sign(PURPOSE, &[challenge.as_bytes()]));
    Challenge { algorithm: "SHA-256".into(), challenge, maxnumber: config.max_number, salt, signature }
}

pub struct Verified {
    pub verdict: Option<SpamReason>,
    /// How long the answer must be remembered to refuse its replay (until it expires).
    pub keep_for: Option<Duration>,
}

/// Checks a posted solution: our signature, not expired, and the number solves it.
pub fn verify(secret: &Secret, payload: &str, now: u64) -> Verified {
    let invalid = Verified { verdict: Some(SpamReason::CaptchaInvalid), keep_for: None };
    let Some(s) =
        STANDARD.decode(payload.trim()).ok().and_then(|json| serde_json::from_slice::<Solution>(&json).ok())
    else {
        return invalid;
    };
    let expires = s
        .salt
        .split_once('?')
        .and_then(|(_, q)| q.split('&').find_map(|kv| kv.strip_prefix("expires=")))
        .and_then(|t| t.parse::<u64>().ok());
    let Some(expires) = expires else { return invalid };
    let signed = decode_hex(&s.signature)
        .is_some_and(|tag| tag.len() == 32 && secret.verify(PURPOSE, &[s.challenge.as_bytes()], &tag));
    let solved = hex(&Sha256::digest(format!("{}{}", s.salt, s.number).as_bytes())) == s.challenge;
    if s.algorithm != "SHA-256" || !signed || !solved || expires <= now {
        return invalid;
    }
    Verified { verdict: None, keep_for: Some(Duration::from_secs(expires - now)) }
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// Solves `c` by trying every number (what the widget does; for tests and tools).
pub fn solve(c: &Challenge) -> Option<String> {
    let number = (0..=c.maxnumber)
        .find(|n| hex(&Sha256::digest(format!("{}{n}", c.salt).as_bytes())) == c.challenge)?;
    let s = Solution {
        algorithm: c.algorithm.clone(),
        challenge: c.challenge.clone(),
        number,
        salt: c.salt.clone(),
        signature: c.signature.clone(),
    };
    Some(STANDARD.encode(serde_json::to_vec(&s).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CaptchaProvider;

    fn config() -> CaptchaConfig {
        let mut c: CaptchaConfig = toml::from_str("provider = 'altcha'").unwrap();
        c.max_number = 2_000;
        assert_eq!(c.provider, CaptchaProvider::Altcha);
        c
    }

    #[test]
    fn solved_signed_and_unexpired_only() {
        let s = Secret::from_bytes([3; 32]);
        let c = challenge(&s, &config(), 1_000);
        let answer = solve(&c).unwrap();
        let ok = verify(&s, &answer, 1_001);
        assert_eq!(ok.verdict, None);
        assert_eq!(ok.keep_for, Some(Duration::from_secs(599)));
        assert_eq!(verify(&s, &answer, 1_600).verdict, Some(SpamReason::CaptchaInvalid), "expired");
        assert_eq!(
            verify(&Secret::from_bytes([4; 32]), &answer, 1_001).verdict,
            Some(SpamReason::CaptchaInvalid)
        );
        let mut wrong: Solution = serde_json::from_slice(&STANDARD.decode(&answer).unwrap()).unwrap();
        wrong.number += 1;
        let wrong = STANDARD.encode(serde_json::to_vec(&wrong).unwrap());
        assert_eq!(verify(&s, &wrong, 1_001).verdict, Some(SpamReason::CaptchaInvalid), "not the number");
        assert_eq!(verify(&s, "not base64 json", 1_001).verdict, Some(SpamReason::CaptchaInvalid));
    }
}
