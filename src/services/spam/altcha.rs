//! ALTCHA, a self-hosted proof of work: a challenge is `SHA-256(salt + number)` for a
//! secret number up to `maxnumber`; the client finds the number and posts it back (base64
//! JSON in the `altcha` field).
//!
//! The salt is `NONCE?expires=UNIX&maxnumber=N&` (32 hex digits of nonce; the trailing `&`
//! is altcha-lib's delimiter against parameter splicing), and the signature is our HMAC over
//! the whole salt and the challenge, so neither the expiry nor the difficulty can be moved:
//! a salt of any other shape is refused before anything else is looked at. A solved
//! challenge is then remembered by its challenge hash, not by the posted bytes
//! ([`super::used`]), so one solution serves one submission however it is re-encoded.

use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::hex;
use crate::base::secret::Secret;
use crate::config::CaptchaConfig;
use crate::domain::SpamReason;

const PURPOSE: &str = "altcha-v2";
const ALGORITHM: &str = "SHA-256";

/// A challenge as the ALTCHA widget expects it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Challenge {
    pub algorithm: String,
    pub challenge: String,
    pub maxnumber: u64,
    pub salt: String,
    pub signature: String,
}

/// A solution as the widget posts it (base64 of this JSON; other members, such as the
/// widget's `took`, are ignored).
#[derive(Debug, Deserialize, Serialize)]
pub struct Solution {
    pub algorithm: String,
    pub challenge: String,
    pub number: u64,
    pub salt: String,
    pub signature: String,
}

/// The salt's parameters, read only from the exact shape [`salt`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SaltParams {
    expires: u64,
    max_number: u64,
}

fn salt(nonce: &str, p: SaltParams) -> String {
    format!("{nonce}?expires={}&maxnumber={}&", p.expires, p.max_number)
}

/// The parameters of a salt that [`salt`] could have written, and of no other.
fn parse_salt(s: &str) -> Option<SaltParams> {
    let (nonce, query) = s.split_once('?')?;
    let (expires, rest) = query.strip_prefix("expires=")?.split_once("&maxnumber=")?;
    let max_number = rest.strip_suffix('&')?;
    let lower_hex = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
    if nonce.len() != 32 || !nonce.bytes().all(lower_hex) {
        return None;
    }
    let p = SaltParams { expires: expires.parse().ok()?, max_number: max_number.parse().ok()? };
    (salt(nonce, p) == s).then_some(p)
}

fn signature(secret: &Secret, salt: &str, challenge: &str) -> [u8; 32] {
    secret.sign(PURPOSE, &[salt.as_bytes(), challenge.as_bytes()])
}

fn digest(salt: &str, number: u64) -> String {
    hex(&Sha256::digest(format!("{salt}{number}").as_bytes()))
}

/// A fresh challenge that expires `config.expires_seconds` after `now`.
pub fn challenge(secret: &Secret, config: &CaptchaConfig, now: u64) -> Challenge {
    let params = SaltParams { expires: now + config.expires_seconds, max_number: config.max_number };
    let salt = salt(&uuid::Uuid::new_v4().simple().to_string(), params);
    let challenge = digest(&salt, fastrand::u64(0..=config.max_number));
    let signature = hex(&signature(secret, &salt, &challenge));
    Challenge { algorithm: ALGORITHM.into(), challenge, maxnumber: config.max_number, salt, signature }
}

/// A solution that holds: what to remember it by, and for how long.
#[derive(Debug, PartialEq, Eq)]
pub struct Solved {
    /// The challenge hash: the same for every encoding of this solution.
    pub key: [u8; 32],
    /// Until the challenge expires; after that the solution is refused anyway.
    pub keep_for: Duration,
}

/// Checks a posted solution: the salt's exact shape, our signature over salt and challenge,
/// not expired, within the signed difficulty, and the number solves it.
pub fn verify(secret: &Secret, payload: &str, now: u64) -> Result<Solved, SpamReason> {
    let s = STANDARD
        .decode(payload.trim())
        .ok()
        .and_then(|json| serde_json::from_slice::<Solution>(&json).ok())
        .ok_or(SpamReason::CaptchaInvalid)?;
    let params = parse_salt(&s.salt).ok_or(SpamReason::CaptchaInvalid)?;
    let key: [u8; 32] =
        decode_hex(&s.challenge).and_then(|c| c.try_into().ok()).ok_or(SpamReason::CaptchaInvalid)?;
    let signed = decode_hex(&s.signature).is_some_and(|tag| {
        tag.len() == 32 && secret.verify(PURPOSE, &[s.salt.as_bytes(), s.challenge.as_bytes()], &tag)
    });
    if s.algorithm != ALGORITHM
        || !signed
        || params.expires <= now
        || s.number > params.max_number
        || digest(&s.salt, s.number) != s.challenge
    {
        return Err(SpamReason::CaptchaInvalid);
    }
    Ok(Solved { key, keep_for: Duration::from_secs(params.expires - now) })
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// Solves `c` by trying every number (what the widget does; for tests and tools).
pub fn solve(c: &Challenge) -> Option<String> {
    let number = (0..=c.maxnumber).find(|n| digest(&c.salt, *n) == c.challenge)?;
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

    fn solution(answer: &str) -> Solution {
        serde_json::from_slice(&STANDARD.decode(answer).unwrap()).unwrap()
    }

    fn encode(s: &Solution) -> String {
        STANDARD.encode(serde_json::to_vec(s).unwrap())
    }

    /// A challenge signed with our secret for a number and salt of the test's choosing.
    fn signed(secret: &Secret, salt: &str, number: u64, max: u64) -> Challenge {
        let challenge = digest(salt, number);
        let signature = hex(&signature(secret, salt, &challenge));
        Challenge { algorithm: ALGORITHM.into(), challenge, maxnumber: max, salt: salt.into(), signature }
    }

    #[test]
    fn solved_signed_and_unexpired_only() {
        let s = Secret::from_bytes([3; 32]);
        let c = challenge(&s, &config(), 1_000);
        let answer = solve(&c).unwrap();
        let ok = verify(&s, &answer, 1_001).unwrap();
        assert_eq!(ok.keep_for, Duration::from_secs(599));
        assert_eq!(verify(&s, &answer, 1_600), Err(SpamReason::CaptchaInvalid), "expired");
        assert_eq!(verify(&Secret::from_bytes([4; 32]), &answer, 1_001), Err(SpamReason::CaptchaInvalid));
        let mut wrong = solution(&answer);
        wrong.number += 1;
        assert_eq!(verify(&s, &encode(&wrong), 1_001), Err(SpamReason::CaptchaInvalid), "not the number");
        assert_eq!(verify(&s, "not base64 json", 1_001), Err(SpamReason::CaptchaInvalid));
    }

    #[test]
    fn every_encoding_of_one_solution_has_one_key() {
        let s = Secret::from_bytes([3; 32]);
        let answer = solve(&challenge(&s, &config(), 1_000)).unwrap();
        let key = verify(&s, &answer, 1_001).unwrap().key;
        let mut with_member: serde_json::Value =
            serde_json::from_slice(&STANDARD.decode(&answer).unwrap()).unwrap();
        with_member["took"] = 12.into();
        let pretty = STANDARD.encode(serde_json::to_string_pretty(&with_member).unwrap());
        for variant in [format!("{answer} "), format!("{answer}\n"), pretty] {
            assert_eq!(verify(&s, &variant, 1_001).unwrap().key, key, "{variant}");
        }
    }

    #[test]
    fn a_digit_moved_into_the_salt_does_not_extend_the_expiry() {
        let s = Secret::from_bytes([3; 32]);
        let salt = salt("0123456789abcdef0123456789abcdef", SaltParams { expires: 1_600, max_number: 2_000 });
        let c = signed(&s, &salt, 1_234, 2_000);
        let mut moved = solution(&solve(&c).unwrap());
        assert!(verify(&s, &encode(&moved), 1_001).is_ok());
        // salt ‖ number is the same string, so the hash still matches: the signature must not.
        moved.salt = format!("{salt}1");
        moved.number = 234;
        assert_eq!(digest(&moved.salt, moved.number), c.challenge);
        assert_eq!(verify(&s, &encode(&moved), 1_700), Err(SpamReason::CaptchaInvalid));
    }

    #[test]
    fn only_the_exact_salt_shape_is_read() {
        let p = SaltParams { expires: 1_600, max_number: 2_000 };
        let nonce = "0123456789abcdef0123456789abcdef";
        assert_eq!(parse_salt(&salt(nonce, p)), Some(p));
        for bad in [
            format!("{nonce}?expires=1600&maxnumber=2000"),
            format!("{nonce}?expires=01600&maxnumber=2000&"),
            format!("{nonce}?expires=+1600&maxnumber=2000&"),
            format!("{nonce}?expires=1600&maxnumber=2000&x=1&"),
            format!("{nonce}?maxnumber=2000&expires=1600&"),
            format!("{}?expires=1600&maxnumber=2000&", nonce.to_uppercase()),
            format!("{}?expires=1600&maxnumber=2000&", &nonce[1..]),
            "?expires=1600&maxnumber=2000&".to_string(),
        ] {
            assert_eq!(parse_salt(&bad), None, "{bad}");
        }
    }

    #[test]
    fn a_number_beyond_the_signed_difficulty_is_refused() {
        let s = Secret::from_bytes([3; 32]);
        let salt = salt("0123456789abcdef0123456789abcdef", SaltParams { expires: 1_600, max_number: 10 });
        let answer = solve(&signed(&s, &salt, 11, 20)).unwrap();
        assert_eq!(verify(&s, &answer, 1_001), Err(SpamReason::CaptchaInvalid));
    }
}
