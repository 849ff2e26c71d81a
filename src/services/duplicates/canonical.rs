//! Canonical forms for matching only: E.164 phones, width- and case-folded text, email
//! without `+tag` (and without dots where the provider ignores them), names whose Latin
//! words are in any order, company names without legal suffixes. What the visitor typed is
//! what is stored, shown and sent; these forms are compared and digested (keyed).

use std::str::FromStr;

use phonenumber::{country, Mode};

use crate::config::FormConfig;
use crate::domain::fold_width;
use crate::domain::keyring::Keyring;

/// A phone number as matched: E.164, and the international format shown to an admin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phone {
    pub e164: String,
    pub shown: String,
}

/// E.164 of `typed` (full-width digits and `＋` folded; national formats read as `region`'s);
/// `None` when it holds no number at all. A number libphonenumber cannot read is matched
/// by its digits (with `+` when it was typed international).
pub fn phone(typed: &str, region: Option<&str>) -> Option<Phone> {
    phone_in(typed, region, &[])
}

/// As `phone`; a national number that is not valid in `region` is tried in `others` in
/// order, and read in the first where it is valid.
pub fn phone_in(typed: &str, region: Option<&str>, others: &[String]) -> Option<Phone> {
    let folded = fold_width(typed);
    let folded = folded.trim();
    let international = folded.starts_with('+') || folded.starts_with("00");
    let digits: String = folded.chars().filter(char::is_ascii_digit).collect();
    if digits.len() < 5 {
        return None;
    }
    let region = region.and_then(|r| country::Id::from_str(r).ok());
    // `00` is the international prefix of most regions (libphonenumber reads it only as
    // the default region's own).
    let plus;
    let folded = match folded.strip_prefix("00") {
        Some(rest) => {
            plus = format!("+{rest}");
            plus.as_str()
        }
        None => folded,
    };
    let parsed = phonenumber::parse(region, folded).ok();
    let parsed = match parsed {
        Some(n) if !international && !n.is_valid() => others
            .iter()
            .filter_map(|r| country::Id::from_str(r).ok())
            .filter_map(|r| phonenumber::parse(Some(r), folded).ok())
            .find(|m| m.is_valid())
            .or(Some(n)),
        other => other,
    };
    if let Some(n) = parsed {
        let e164 = n.format().mode(Mode::E164).to_string();
        let shown = n.format().mode(Mode::International).to_string();
        return Some(Phone { e164, shown });
    }
    let e164 = match international {
        true => format!("+{}", digits.strip_prefix("00").unwrap_or(&digits)),
        false => digits,
    };
    Some(Phone { shown: e164.clone(), e164 })
}

/// The ISO 3166 region (`TW`) of a number in E.164, by its country calling code (a code
/// several regions share is its main region's: `+1` is `US`); `None` when unreadable.
pub fn region(e164: &str) -> Option<String> {
    let id = phonenumber::parse(None, e164).ok()?.country().id()?;
    Some(id.as_ref().to_string())
}

/// The address as matched: width- and case-folded, `+tag` removed, dots removed for the
/// `dotless` domains. `None` without an `@`.
pub fn email(typed: &str, dotless: &[String]) -> Option<String> {
    let folded = fold_width(typed).trim().to_lowercase();
    let (local, domain) = folded.rsplit_once('@')?;
    let local = local.split_once('+').map_or(local, |(l, _)| l);
    let local = match dotless.iter().any(|d| d.eq_ignore_ascii_case(domain)) {
        true => local.replace('.', ""),
        false => local.to_string(),
    };
    (!local.is_empty() && !domain.is_empty()).then(|| format!("{local}@{domain}"))
}

/// Chinese, Japanese or Korean script (written without spaces between words).
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30ff | 0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xf900..=0xfaff | 0xac00..=0xd7af
        | 0x20000..=0x2ffff)
}

fn words(folded: &str) -> Vec<String> {
    folded.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// A person's name as matched: folded; CJK without spaces; Latin words in sorted order
/// ("Lin Mei" = "mei lin").
pub fn name(typed: &str) -> String {
    let folded = fold_width(typed);
    let mut w = words(&folded);
    if folded.chars().any(is_cjk) {
        return w.concat();
    }
    w.sort();
    w.join(" ")
}

/// Legal-form words dropped from the end of a company name (Latin, as whole words).
const LATIN_SUFFIXES: &[&str] = &[
    "inc",
    "incorporated",
    "ltd",
    "limited",
    "llc",
    "gmbh",
    "co",
    "corp",
    "corporation",
    "company",
    "plc",
    "ag",
    "sa",
    "pte",
    "bv",
    "kk",
];
/// Legal forms dropped from either end of a CJK company name, longest first.
const CJK_SUFFIXES: &[&str] = &["股份有限公司", "有限责任公司", "有限公司", "株式会社", "有限会社", "公司"];

/// A company name as matched: folded, legal suffixes gone, no spaces or punctuation.
pub fn company(typed: &str) -> String {
    let mut w = words(&fold_width(typed));
    while w.len() > 1 && w.last().is_some_and(|l| LATIN_SUFFIXES.contains(&l.as_str())) {
        w.pop();
    }
    let mut joined = w.concat();
    while let Some(rest) = CJK_SUFFIXES.iter().find_map(|s| {
        let rest = joined.strip_suffix(s).or_else(|| joined.strip_prefix(s))?;
        (!rest.is_empty()).then(|| rest.to_string())
    }) {
        joined = rest;
    }
    joined
}

/// The canonical contact of one submission (from its stored or submitted fields).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Contact {
    pub email: Option<String>,
    pub phone: Option<Phone>,
    pub name: Option<String>,
    pub company: Option<String>,
}

impl Contact {
    pub fn of<'a>(form: &FormConfig, get: impl Fn(&str) -> Option<&'a str>) -> Contact {
        use crate::domain::FieldType;
        let first =
            |kind: FieldType| form.fields.iter().filter(|f| f.kind == kind).find_map(|f| get(&f.name));
        let d = &form.duplicates;
        let nonempty = |s: String| (!s.is_empty()).then_some(s);
        Contact {
            email: first(FieldType::Email).and_then(|e| email(e, &d.dotless_domains)),
            phone: first(FieldType::Phone)
                .and_then(|p| phone_in(p, form.default_region.as_deref(), &d.other_regions)),
            name: get(&d.name_field).map(name).and_then(nonempty),
            company: get(&d.company_field).map(company).and_then(nonempty),
        }
    }

    /// The keyed digests (with `k`) the look-up matches on: email, phone, name plus company.
    pub fn digests(&self, k: &Keyring) -> Digests {
        Digests {
            email: self.email.as_deref().map(|e| k.digest(e)),
            phone: self.phone.as_ref().map(|p| k.digest(&p.e164)),
            name: match (&self.name, &self.company) {
                (Some(n), Some(c)) => Some(k.digest(&format!("name\n{n}\ncompany\n{c}"))),
                _ => None,
            },
        }
    }
}

/// Keyed digests of a contact's canonical forms (`submissions.email_digest`,
/// `phone_digest`, `name_digest`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Digests {
    pub email: Option<String>,
    pub phone: Option<String>,
    pub name: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e164(typed: &str, region: &str) -> String {
        phone(typed, Some(region)).unwrap().e164
    }

    #[test]
    fn phones_of_five_regions_become_e164_full_width_included() {
        for typed in
            ["0912-345-678", "+886 912 345 678", "０９１２３４５６７８", "(0912) 345678", "00886912345678"]
        {
            assert_eq!(e164(typed, "TW"), "+886912345678", "{typed}");
        }
        assert_eq!(e164("(02) 2712-3456", "TW"), "+886227123456");
        for typed in ["(415) 555-0132", "415.555.0132", "+1 415-555-0132", "１－４１５－５５５－０１３２"]
        {
            assert_eq!(e164(typed, "US"), "+14155550132", "{typed}");
        }
        assert_eq!(e164("090-1234-5678", "JP"), "+819012345678");
        assert_eq!(e164("０３－１２３４－５６７８", "JP"), "+81312345678");
        assert_eq!(e164("138 0013 8000", "CN"), "+8613800138000");
        assert_eq!(e164("+86 138-0013-8000", "TW"), "+8613800138000");
        assert_eq!(e164("9123 4567", "HK"), "+85291234567");
        assert_eq!(e164("+852 9123 4567", "US"), "+85291234567");
        assert_eq!(phone("+886 912 345 678", None).unwrap().shown, "+886 912 345 678");
        let us = ["US".to_string()];
        assert_eq!(phone_in("(415) 555-0132", Some("TW"), &us).unwrap().e164, "+14155550132");
        assert_eq!(phone_in("0912-345-678", Some("TW"), &us).unwrap().e164, "+886912345678");
        assert!(phone("12", Some("TW")).is_none());
    }

    #[test]
    fn emails_lose_case_width_tags_and_provider_dots() {
        let dotless = vec!["gmail.com".to_string()];
        assert_eq!(email("Mei.Lin+quote@Gmail.com", &dotless).as_deref(), Some("meilin@gmail.com"));
        assert_eq!(
            email("ＭＥＩ．ＬＩＮ＠ｇｍａｉｌ．ｃｏｍ", &dotless).as_deref(),
            Some("meilin@gmail.com")
        );
        assert_eq!(email("mei.lin@example.com", &dotless).as_deref(), Some("mei.lin@example.com"));
        assert_eq!(email("nope", &dotless), None);
    }

    #[test]
    fn names_and_companies_fold() {
        assert_eq!(name("Lin Mei"), name("MEI  lin"));
        assert_eq!(name("林 美"), "林美");
        assert_eq!(name("Ｌｉｎ　Ｍｅｉ"), "lin mei");
        assert_eq!(company("台灣精密股份有限公司"), "台灣精密");
        assert_eq!(company("台灣精密公司"), "台灣精密");
        assert_eq!(company("Acme Trading Co., Ltd."), "acmetrading");
        assert_eq!(company("ACME trading, Inc"), "acmetrading");
        assert_eq!(company("Bosch GmbH"), "bosch");
        assert_eq!(company("公司"), "公司");
    }
}
