//! The fill-time stamp: the time a form was rendered, signed with the server secret, posted
//! back in the hidden field `_stamp`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use crate::base::secret::Secret;
use crate::domain::SpamReason;

/// The hidden field's name (not a valid field name, so it cannot clash with one).
pub const FIELD: &str = "_stamp";
const PURPOSE: &str = "fill-time";
/// Clocks of several servers may differ this much.
const SKEW_SECONDS: u64 = 30;

/// `ISSUED.TAG`: seconds since the epoch and 16 bytes of HMAC over the form and that time.
pub fn issue(secret: &Secret, form: &str, issued: u64) -> String {
    let issued = issued.to_string();
    let tag = secret.sign(PURPOSE, &[form.as_bytes(), issued.as_bytes()]);
    format!("{issued}.{}", URL_SAFE_NO_PAD.encode(&tag[..16]))
}

/// Ok when `stamp` was issued by us for `form` at least `min_seconds` before `now`.
pub fn check(secret: &Secret, form: &str, stamp: &str, min_seconds: u64, now: u64) -> Result<(), SpamReason> {
    let (issued_text, tag) = stamp.split_once('.').ok_or(SpamReason::ForgedStamp)?;
    let issued: u64 = issued_text.parse().map_err(|_| SpamReason::ForgedStamp)?;
    let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| SpamReason::ForgedStamp)?;
    if !secret.verify(PURPOSE, &[form.as_bytes(), issued_text.as_bytes()], &tag)
        || issued > now + SKEW_SECONDS
    {
        return Err(SpamReason::ForgedStamp);
    }
    if now.saturating_sub(issued) < min_seconds {
        return Err(SpamReason::TooFast);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_fast_forged_and_fine() {
        let s = Secret::from_bytes([1; 32]);
        let st = issue(&s, "contact", 1_000);
        assert_eq!(check(&s, "contact", &st, 3, 1_001), Err(SpamReason::TooFast));
        assert_eq!(check(&s, "contact", &st, 3, 1_003), Ok(()));
        assert_eq!(check(&s, "contact", &st, 3, 90_000), Ok(()), "a tab left open is still a person");
        assert_eq!(check(&s, "other", &st, 3, 1_003), Err(SpamReason::ForgedStamp));
        let earlier = st.replacen("1000.", "900.", 1);
        assert_eq!(check(&s, "contact", &earlier, 3, 1_003), Err(SpamReason::ForgedStamp));
        assert_eq!(
            check(&Secret::from_bytes([2; 32]), "contact", &st, 3, 1_003),
            Err(SpamReason::ForgedStamp)
        );
        for junk in ["", "1000", "x.y", "1000.!!", "1000.AAAA"] {
            assert_eq!(check(&s, "contact", junk, 3, 1_003), Err(SpamReason::ForgedStamp), "{junk}");
        }
        let future = issue(&s, "contact", 2_000);
        assert_eq!(check(&s, "contact", &future, 3, 1_003), Err(SpamReason::ForgedStamp));
    }
}
