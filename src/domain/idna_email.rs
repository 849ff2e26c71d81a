//! Internationalised email domains: `陳@例子.台灣` is stored as typed and sent as IDNA
//! (`陳@xn--fsqu00a.xn--kpry57d`), the only form every SMTP server takes in `RCPT TO`.

/// `address` with its domain in IDNA (ASCII) form; `None` when the domain is not a valid
/// internationalised domain name. An ASCII address comes back unchanged (but lowercased
/// in the domain, as IDNA writes it).
pub fn ascii_email(address: &str) -> Option<String> {
    let (local, domain) = address.rsplit_once('@')?;
    if local.is_empty() || domain.is_empty() {
        return None;
    }
    let ascii = idna::domain_to_ascii(domain).ok()?;
    (!ascii.is_empty()).then(|| format!("{local}@{ascii}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internationalised_domains_are_sent_as_idna() {
        assert_eq!(ascii_email("chen@例子.台灣").as_deref(), Some("chen@xn--fsqu00a.xn--kpry57d"));
        assert_eq!(ascii_email("ada@Example.com").as_deref(), Some("ada@example.com"));
        assert_eq!(ascii_email("no-at-sign"), None);
        assert_eq!(ascii_email("@例子.台灣"), None);
    }
}
