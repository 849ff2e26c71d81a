//! Width folding: what an IME in full-width mode types (`０９１２`, `＠`, `＋`, `Ａ`) read as
//! the ASCII it stands for. Used where a value is validated and matched, never for what is
//! stored: the visitor's own characters are kept, shown and sent.

use unicode_normalization::UnicodeNormalization;

/// `s` with full-width (and other compatibility) forms of digits, Latin letters and
/// punctuation folded to ASCII (NFKC), e.g. `０９１２－３４５` → `0912-345`.
pub fn fold_width(s: &str) -> String {
    s.nfkc().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_width_digits_at_and_plus_are_ascii() {
        assert_eq!(fold_width("＋８８６　９１２"), "+886 912");
        assert_eq!(fold_width("ａｄａ＠ｅｘａｍｐｌｅ．ｃｏｍ"), "ada@example.com");
        assert_eq!(fold_width("林美"), "林美");
    }
}
