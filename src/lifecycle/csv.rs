//! A small RFC 4180 reader: quoted fields (with `""` and line breaks inside), `,` separators,
//! CRLF or LF line ends. Each record comes with the line it starts on.

/// The records of `text` as (line number, fields); an unterminated quote is an error.
pub fn records(text: &str) -> Result<Vec<(usize, Vec<String>)>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    let (mut fields, mut field) = (Vec::new(), String::new());
    let (mut line, mut start_line, mut quoted, mut at_start) = (1, 1, false, true);
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        match (quoted, ch) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => {
                if c == '\n' {
                    line += 1;
                }
                field.push(c);
            }
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => fields.push(std::mem::take(&mut field)),
            (false, '\r') if chars.peek() == Some(&'\n') => {}
            (false, '\n') => {
                fields.push(std::mem::take(&mut field));
                if !(fields.len() == 1 && fields[0].is_empty()) {
                    out.push((start_line, std::mem::take(&mut fields)));
                }
                fields.clear();
                line += 1;
                start_line = line;
                at_start = true;
                continue;
            }
            (false, c) => field.push(c),
        }
        at_start = false;
    }
    if quoted {
        return Err(format!("line {start_line}: a quoted field is not closed"));
    }
    if !at_start || !field.is_empty() || !fields.is_empty() {
        fields.push(field);
        out.push((start_line, fields));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_quotes_line_breaks_and_crlf() {
        let r = records("a,b\r\n\"x, \"\"y\"\"\",\"two\nlines\"\n\n3,4").unwrap();
        assert_eq!(r[0], (1, vec!["a".to_string(), "b".into()]));
        assert_eq!(r[1], (2, vec!["x, \"y\"".to_string(), "two\nlines".into()]));
        assert_eq!(r[2], (5, vec!["3".to_string(), "4".into()]));
        assert!(records("a,\"unclosed").is_err());
    }
}
