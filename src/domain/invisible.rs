//! Characters refused in submitted fields because they change how text reads without
//! showing themselves: bidirectional overrides and isolates (which can make an admin page,
//! an email or a CSV cell read differently from what is stored) and zero-width spaces
//! (which hide words from filters and make look-alike values).
//!
//! The zero-width joiner (U+200D) and non-joiner (U+200C) are kept: emoji sequences and
//! scripts such as Persian, Hindi and Malayalam need them in ordinary text.

/// True for a character a field must not contain.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{061C}'             // Arabic letter mark
            | '\u{180E}'       // Mongolian vowel separator
            | '\u{200B}'       // zero-width space
            | '\u{200E}'..='\u{200F}' // left-to-right and right-to-left marks
            | '\u{202A}'..='\u{202E}' // embeddings and overrides
            | '\u{2060}'..='\u{2064}' // word joiner and invisible operators
            | '\u{2066}'..='\u{2069}' // isolates
            | '\u{FEFF}'       // zero-width no-break space (byte order mark)
    )
}

#[cfg(test)]
mod tests {
    use super::is_invisible;

    #[test]
    fn overrides_and_zero_width_spaces_are_refused_joiners_kept() {
        for c in ['\u{202E}', '\u{2066}', '\u{2069}', '\u{200B}', '\u{200F}', '\u{FEFF}', '\u{2060}'] {
            assert!(is_invisible(c), "{:?}", c);
        }
        for c in ['a', ' ', '\u{200C}', '\u{200D}', 'é', '👩'] {
            assert!(!is_invisible(c), "{:?}", c);
        }
    }
}
