//! Free text as the screener compares it: shingles that work for Chinese, Japanese and
//! English alike (character bigrams for CJK, words plus character trigrams for Latin
//! scripts), and the identifiers and numbers in it, which are compared exactly.

use std::collections::BTreeSet;

use super::canonical::is_cjk;
use crate::domain::fold_width;

/// What one text is compared by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    shingles: BTreeSet<String>,
    /// Model numbers and part codes (letters and digits: `X200`, `A-17` as `A17`).
    pub codes: BTreeSet<String>,
    /// Quantities and other short numbers (up to 6 digits; longer ones are phone-like).
    pub numbers: BTreeSet<String>,
}

/// At most this many characters of a text are profiled (a bound on the screener's work).
const MAX_CHARS: usize = 4000;

pub fn profile(text: &str) -> Profile {
    let folded: String = fold_width(text).to_lowercase().chars().take(MAX_CHARS).collect();
    let mut p = Profile::default();
    let chars: Vec<char> = folded.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_cjk(c) {
            let start = i;
            while i < chars.len() && is_cjk(chars[i]) {
                i += 1;
            }
            let run = &chars[start..i];
            if run.len() == 1 {
                p.shingles.insert(run[0].to_string());
            }
            for w in run.windows(2) {
                p.shingles.insert(w.iter().collect());
            }
        } else if c.is_ascii_alphanumeric() {
            // A token: letters and digits, with single inner `-`, `.` or `/` (A-17, 1.5, 2026-12-01).
            // A thousands separator stays inside a number (12,000); a time (10:30) is no quantity.
            let start = i;
            let thousands = |i: usize| {
                chars[i] == ','
                    && chars[start..i].iter().all(char::is_ascii_digit)
                    && chars.get(i + 1..i + 4).is_some_and(|d| d.iter().all(char::is_ascii_digit))
                    && !chars.get(i + 4).is_some_and(char::is_ascii_digit)
            };
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric()
                    || thousands(i)
                    || (matches!(chars[i], '-' | '.' | '/')
                        && chars.get(i + 1).is_some_and(char::is_ascii_alphanumeric)
                        && i > start))
            {
                i += 1;
            }
            let time = chars.get(i) == Some(&':') || (start > 0 && chars[start - 1] == ':');
            token(&chars[start..i].iter().filter(|c| **c != ',').collect::<String>(), time, &mut p);
        } else if c.is_alphabetic() {
            let start = i;
            while i < chars.len() && chars[i].is_alphabetic() && !is_cjk(chars[i]) {
                i += 1;
            }
            word(&chars[start..i].iter().collect::<String>(), &mut p);
        } else {
            i += 1;
        }
    }
    p
}

/// Units written onto a quantity (`50pcs`): the number is the quantity, not a code.
const UNITS: &[&str] = &["pcs", "pc", "units", "unit", "sets", "set", "kg", "g", "ea", "x", "k"];

fn token(t: &str, time: bool, p: &mut Profile) {
    let has_letter = t.chars().any(|c| c.is_ascii_alphabetic());
    let has_digit = t.chars().any(|c| c.is_ascii_digit());
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits_end > 0 && UNITS.contains(&&t[digits_end..]) {
        return token(&t[..digits_end], time, p);
    }
    match (has_letter, has_digit) {
        (true, true) => {
            let code: String = t.chars().filter(char::is_ascii_alphanumeric).collect();
            p.codes.insert(code.to_uppercase());
            p.shingles.insert(format!("w:{code}"));
        }
        (false, true) => {
            let digits = t.chars().filter(char::is_ascii_digit).count();
            // Dates, times and phone numbers (with `-` or `/`, or long) are not quantities.
            if !time && !t.contains(['-', '/']) && digits <= 6 {
                let n = t.trim_start_matches('0');
                p.numbers.insert(if n.is_empty() || n.starts_with('.') {
                    format!("0{n}")
                } else {
                    n.to_string()
                });
            }
            p.shingles.insert(format!("w:{t}"));
        }
        _ => {
            for w in t.split(['-', '.', '/']) {
                word(w, p);
            }
        }
    }
}

fn word(w: &str, p: &mut Profile) {
    if w.chars().count() < 2 {
        return;
    }
    p.shingles.insert(format!("w:{w}"));
    let padded: Vec<char> = format!(" {w} ").chars().collect();
    for t in padded.windows(3) {
        p.shingles.insert(t.iter().collect());
    }
}

/// How alike two texts are, 0..=1: the mean of their shingles' Jaccard overlap and their
/// containment (a repeat with a line added, "the first one failed", stays alike).
pub fn similarity(a: &Profile, b: &Profile) -> f64 {
    let (x, y) = (&a.shingles, &b.shingles);
    if x.is_empty() || y.is_empty() {
        return 0.0;
    }
    let common = x.intersection(y).count() as f64;
    let jaccard = common / ((x.len() + y.len()) as f64 - common);
    let containment = common / x.len().min(y.len()) as f64;
    (jaccard + containment) / 2.0
}

/// Two sets in conflict: each has a member the other lacks (another product, not one more).
pub fn conflict(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    a.difference(b).next().is_some() && b.difference(a).next().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retyped_chinese_message_is_alike_and_another_one_is_not() {
        let first = profile("您好，我們想詢問X200型號的報價，數量大約50台，請盡快回覆，謝謝。");
        let retyped = profile("你好，想詢問 X200 型號報價，數量約50台，請儘快回覆。謝謝！");
        let other = profile("請問貴公司的維修服務怎麼申請？我的機器無法開機。");
        assert!(similarity(&first, &retyped) > 0.55, "{}", similarity(&first, &retyped));
        assert!(similarity(&first, &other) < 0.2, "{}", similarity(&first, &other));
        assert_eq!(first.codes, retyped.codes);
        assert!(first.numbers.contains("50"));
    }

    #[test]
    fn codes_and_quantities_are_exact_evidence() {
        let a = profile("Quote for 40 units of the X200, please");
        let b = profile("Quote for 40 units of the A-17, please");
        assert!(conflict(&a.codes, &b.codes));
        assert!(b.codes.contains("A17"));
        assert!(!conflict(&a.numbers, &b.numbers));
        let note = profile("Resending, the first one failed at 10:30. Quote for 40 units of the X200");
        assert!(!conflict(&a.codes, &note.codes));
        assert!(similarity(&a, &note) > 0.5, "{}", similarity(&a, &note));
        assert!(profile("call 0912-345-678 on 2026-12-01 at 10:30").numbers.is_empty());
        assert_eq!(
            profile("50pcs of X200 at NT$12,000").numbers,
            profile("50 pcs of X200 at NT$12000").numbers
        );
        assert!(profile("50pcs").codes.is_empty(), "a quantity with its unit is not a code");
    }
}
