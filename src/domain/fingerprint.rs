//! The content fingerprint: "same content" means the same fingerprint.

use sha2::{Digest, Sha256};

use super::keyring::Keyring;
use super::{Attached, NormalisedFields, RawFields};

/// The keyed digest (`keys`: HMAC-SHA-256 with the server secret, hex) of the canonical JSON of
/// the declared fields that have a value after normalisation, keys sorted, a phone by its
/// digits (`NormalisedFields::content_json`). Absent fields are left out, so declaring a new optional
/// field does not change the fingerprint of earlier submissions. The operation ID, the
/// honeypot and volatile fields are never part of it.
pub fn fingerprint(keys: &Keyring, fields: &NormalisedFields) -> String {
    keys.digest(&fields.content_json())
}

/// SHA-256 of the fields exactly as received (names and values, in order, each
/// length-prefixed) and of the files attached (each field's name and file reference):
/// equal digests mean the same request content, so the same normalised fields and the same
/// fingerprint. Kept in memory only, to answer a repeated retry without normalising it again
/// (`accept::Acceptor::replay_same_request`).
pub fn raw_digest(raw: &RawFields, files: &Attached) -> [u8; 32] {
    let mut hash = Sha256::new();
    // The count of pairs first: no text reads as a file.
    hash.update((raw.len() as u64).to_le_bytes());
    let mut add = |part: &str| {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    };
    for (name, value) in raw {
        add(name);
        add(value);
    }
    for (name, file) in files {
        add(name);
        add(&file.to_value());
    }
    hash.finalize().into()
}

/// Plain SHA-256 of `text`, as lower-case hex: for tokens, never for personal data.
pub fn digest(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, FormConfig};
    use crate::domain::{normalise, RawFields};
    use proptest::prelude::*;

    fn contact() -> FormConfig {
        Config::builtin().unwrap().forms["contact"].clone()
    }

    fn fp(pairs: &[(String, String)]) -> String {
        let form = contact();
        let keys = Keyring::new(crate::base::secret::Secret::new("onceform unit-test secret"), Vec::new());
        fingerprint(&keys, &normalise(&form, &pairs.to_vec()).unwrap())
    }

    fn base() -> RawFields {
        [("name", "Ada"), ("email", "ada@example.com"), ("topic", "Sales"), ("message", "Hi there")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn is_stable_keyed_hex() {
        let f = fp(&base());
        assert_eq!(f.len(), 8 + 1 + 64, "key version, colon, HMAC-SHA-256");
        assert!(!f.contains(&digest(&normalise(&contact(), &base()).unwrap().to_json())));
        assert_eq!(f, fp(&base()));
    }

    #[test]
    fn nfc_and_nfd_are_the_same_content() {
        let mut a = base();
        let mut b = base();
        a[0].1 = "Zo\u{e9}".into();
        b[0].1 = "Zoe\u{301}".into();
        assert_eq!(fp(&a), fp(&b));
    }

    #[test]
    fn volatile_fields_do_not_count() {
        let mut b = base();
        b.push(("operation_id".into(), "abcdefghijklmnopq".into()));
        b.push(("h-captcha-response".into(), "t".into()));
        b.push(("website".into(), "".into()));
        assert_eq!(fp(&base()), fp(&b));
    }

    proptest! {
        #[test]
        fn order_of_keys_never_changes_it(seed in 0usize..24) {
            let mut b = base();
            let n = b.len();
            b.rotate_left(seed % n);
            if seed % 2 == 1 { b.reverse(); }
            prop_assert_eq!(fp(&base()), fp(&b));
        }

        #[test]
        fn surrounding_whitespace_and_email_case_never_change_it(
            pad in "[ \t\n]{0,4}", upper in proptest::collection::vec(any::<bool>(), 15)
        ) {
            let mut b = base();
            let email: String = "ada@example.com".chars().zip(upper.iter().cycle())
                .map(|(c, u)| if *u { c.to_ascii_uppercase() } else { c }).collect();
            b[1].1 = format!("{pad}{email}{pad}");
            b[0].1 = format!("{pad}Ada{pad}");
            b[3].1 = format!("{pad}Hi there{pad}");
            prop_assert_eq!(fp(&base()), fp(&b));
        }

        #[test]
        fn a_changed_field_always_changes_it(field in 0usize..4, text in "[a-z][a-z0-9 ]{0,30}[a-z]") {
            let mut b = base();
            let new = if field == 1 { format!("{}@example.org", text.replace(' ', "")) }
                      else if field == 2 { "Support".to_string() }
                      else { text };
            prop_assume!(normalise_eq_differs(&base()[field].1, &new));
            b[field].1 = new;
            prop_assert_ne!(fp(&base()), fp(&b));
        }

        #[test]
        fn adding_an_optional_field_changes_it(company in "[A-Za-z][A-Za-z ]{0,20}") {
            let mut b = base();
            b.push(("company".into(), company));
            prop_assert_ne!(fp(&base()), fp(&b));
        }
    }

    fn normalise_eq_differs(a: &str, b: &str) -> bool {
        let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
        squash(a) != squash(b)
    }

    #[test]
    fn the_raw_digest_tells_where_one_field_ends_and_the_next_begins() {
        let pair = |a: &str, b: &str| vec![(a.to_string(), b.to_string())];
        assert_eq!(
            raw_digest(&pair("name", "Ada"), &Vec::new()),
            raw_digest(&pair("name", "Ada"), &Vec::new())
        );
        assert_ne!(
            raw_digest(&pair("name", "Ada"), &Vec::new()),
            raw_digest(&pair("nameA", "da"), &Vec::new())
        );
        assert_ne!(
            raw_digest(&pair("name", "Ada"), &Vec::new()),
            raw_digest(&pair("name", "Ada "), &Vec::new())
        );
    }
}
