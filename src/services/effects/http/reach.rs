//! Which addresses an outbound request may reach: one rule for every URL the effects call
//! (the CRM adapters, `slack`, `webhook`, the inbound `forward` and `webhook` handlers). An
//! address that is not on the public internet (`is_private`) is refused unless the operator
//! allows private targets for that URL (`allow_private = true`: `Reach::Any`).
//!
//! The rule is held where the connection is made. A host name is resolved by `Resolver`,
//! which drops every private answer, so a name that resolves (or is rebound) to
//! `169.254.169.254`, `10.0.0.5` or `127.0.0.1` is never connected to; a URL whose host is an
//! address (which no resolver is asked about) is checked by `Client::send` before anything is
//! sent. check-config applies the same rule to the addresses written in URLs and to
//! `localhost` (`problem`).
//!
//! A loopback address written in the URL (`127.0.0.0/8`, `[::1]`) stays allowed: the
//! operator named this machine, as `http://` to loopback always allowed (the URL policy). A
//! name that resolves to loopback (`localhost` among them) does not: it could be made to.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::{Host, Url};

/// Where a client may connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Public addresses, and loopback when the URL writes it as an address.
    Public,
    /// Any address: the operator set `allow_private = true` (the receiver is on their network).
    Any,
}

impl Reach {
    /// `Any` when the operator allows private addresses, else `Public`.
    pub fn allowing_private(allow_private: bool) -> Reach {
        if allow_private {
            Reach::Any
        } else {
            Reach::Public
        }
    }

    /// Whether a URL whose host is the address `ip` may be called.
    pub fn admits_written(self, ip: IpAddr) -> bool {
        self == Reach::Any || !is_private(ip) || ip.is_loopback()
    }

    /// Whether an address a host name resolved to may be connected to.
    pub fn admits_resolved(self, ip: IpAddr) -> bool {
        self == Reach::Any || !is_private(ip)
    }

    /// Whether `url` may be called as far as its written host tells (a name is held to the
    /// rule when it is resolved).
    pub fn admits_url(self, url: &Url) -> bool {
        match url.host() {
            Some(Host::Ipv4(ip)) => self.admits_written(IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => self.admits_written(IpAddr::V6(ip)),
            Some(Host::Domain(_)) | None => true,
        }
    }
}

/// check-config: what is wrong with `url`'s host under `reach` (`setting` names the URL): a
/// private address written in it, or `localhost`, which resolves to loopback and so is
/// refused when the connection is made.
pub fn problem(setting: &str, url: &str, reach: Reach) -> Option<String> {
    let parsed = Url::parse(url.trim()).ok()?;
    let allow = "set allow_private = true if the receiver is yours";
    match parsed.host() {
        _ if reach == Reach::Any => None,
        Some(Host::Domain(d)) if is_localhost(d) => Some(format!(
            "{setting}: `{d}` resolves to a loopback address, which is refused when connecting; \
             write 127.0.0.1 or {allow}"
        )),
        _ if reach.admits_url(&parsed) => None,
        _ => Some(format!(
            "{setting}: {} is a private or reserved address; {allow}",
            parsed.host_str().unwrap_or_default()
        )),
    }
}

/// `localhost` and the names under it, which resolve to loopback (RFC 6761).
fn is_localhost(domain: &str) -> bool {
    let d = domain.trim_end_matches('.').to_ascii_lowercase();
    d == "localhost" || d.ends_with(".localhost")
}

/// Whether `ip` is an address no public endpoint has: loopback, private, link-local, shared
/// (CGNAT), IETF protocol assignments, unspecified, broadcast, documentation, benchmarking,
/// multicast, reserved; IPv6 unique-local, link-local and site-local, and the IPv4 address
/// an IPv6 address carries (IPv4-mapped, IPv4-compatible, NAT64, 6to4) judged as IPv4. The
/// local-use NAT64 prefix (`64:ff9b:1::/48`) is private whatever it carries.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => private_v4(v4),
        IpAddr::V6(v6) => private_v6(v6),
    }
}

fn private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    a == 0 // "this network", 0.0.0.0 among it
        || ip.is_private() // 10/8, 172.16/12, 192.168/16
        || ip.is_loopback() // 127/8
        || ip.is_link_local() // 169.254/16
        || (a == 100 && (b & 0xc0) == 64) // shared address space (CGNAT), 100.64/10
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments, 192.0.0.0/24
        || ip.is_documentation() // 192.0.2/24, 198.51.100/24, 203.0.113/24
        || (a == 198 && (b & 0xfe) == 18) // benchmarking, 198.18/15
        || ip.is_multicast() // 224/4
        || a >= 240 // reserved 240/4, and the broadcast address
}

fn private_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = carried_v4(ip) {
        return private_v4(v4);
    }
    let s = ip.segments();
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast() // ff00::/8
        || (s[0] & 0xfe00) == 0xfc00 // unique local, fc00::/7
        || (s[0] & 0xffc0) == 0xfe80 // link-local, fe80::/10
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated), fec0::/10
        || (s[0] == 0x0064 && s[1] == 0xff9b && s[2] == 0x0001) // local-use NAT64, 64:ff9b:1::/48
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation, 2001:db8::/32
        || (s[0] == 0x2001 && s[1] == 0x0002 && s[2] == 0) // benchmarking, 2001:2::/48
        || (s[0] == 0x0100 && s[1] == 0 && s[2] == 0 && s[3] == 0) // discard-only, 100::/64
}

/// The IPv4 address an IPv6 address carries: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible
/// (`::a.b.c.d`, `::` and `::1` left to IPv6's own rules), NAT64 (`64:ff9b::a.b.c.d`) and
/// 6to4 (`2002:aabb:ccdd::/48`).
fn carried_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let o = ip.octets();
    let last = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    match ip.segments() {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(last),
        [0, 0, 0, 0, 0, 0, _, _] if !ip.is_unspecified() && !ip.is_loopback() => Some(last),
        [0x0064, 0xff9b, 0, 0, 0, 0, _, _] => Some(last),
        [0x2002, _, _, _, _, _, _, _] => Some(Ipv4Addr::new(o[2], o[3], o[4], o[5])),
        _ => None,
    }
}

/// Why a connection was not made: every address the host name resolved to is private.
/// Shown as `private_address` in the attempts log (`http::transport_error`).
#[derive(Debug)]
pub struct PrivateAddress;

impl std::fmt::Display for PrivateAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the host name resolves only to private or reserved addresses")
    }
}

impl std::error::Error for PrivateAddress {}

/// Whether `error` (or what caused it) is a `PrivateAddress`.
pub fn is_private_refusal(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if e.is::<PrivateAddress>() {
            return true;
        }
        cause = e.source();
    }
    false
}

/// The system's resolver (as the client's own default), keeping only the public answers: a
/// name with none left is `PrivateAddress`, and no connection is tried.
pub struct Resolver;

impl Resolve for Resolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> =
                all.iter().copied().filter(|a| Reach::Public.admits_resolved(a.ip())).collect();
            if public.is_empty() && !all.is_empty() {
                return Err(Box::new(PrivateAddress) as Box<dyn std::error::Error + Send + Sync>);
            }
            let addrs: Addrs = Box::new(public.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// Issue 45: the check missed IPv4-mapped, CGNAT and other ranges.
    #[test]
    fn every_private_or_reserved_range_is_private() {
        for private in [
            "127.0.0.1",
            "127.255.0.9",
            "10.0.0.5",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.100.100.200",
            "100.127.255.255",
            "192.0.0.8",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.7",
            "198.18.0.1",
            "198.19.255.255",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "::",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.5",
            "::ffff:127.0.0.1",
            "::ffff:100.100.100.200",
            "::169.254.169.254",
            "::10.0.0.5",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b::10.0.0.5",
            "64:ff9b:1::8.8.8.8",
            "64:ff9b:1:abcd::1",
            "2002:a9fe:a9fe::1",
            "2001:2::1",
            "100::1",
        ] {
            assert!(is_private(ip(private)), "{private}");
        }
        for public in [
            "8.8.8.8",
            "1.1.1.1",
            "100.63.255.255",
            "100.128.0.1",
            "172.32.0.1",
            "192.0.1.1",
            "198.17.0.1",
            "198.20.0.1",
            "223.255.255.255",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
            "2002:0808:0808::1",
        ] {
            assert!(!is_private(ip(public)), "{public}");
        }
    }

    #[test]
    fn a_written_loopback_address_is_the_only_private_one_admitted_by_default() {
        let url = |u: &str| Url::parse(u).unwrap();
        for ok in ["http://127.0.0.1:9/x", "http://[::1]/", "https://hooks.example.com/", "https://8.8.8.8/"]
        {
            assert!(Reach::Public.admits_url(&url(ok)), "{ok}");
        }
        for refused in [
            "https://[::ffff:169.254.169.254]/",
            "https://[::ffff:10.0.0.5]/",
            "https://100.100.100.200/",
            "https://169.254.169.254/latest/meta-data/",
            "https://[::ffff:127.0.0.1]/",
            "https://0x0a000005/",
            "https://[64:ff9b::a9fe:a9fe]/",
        ] {
            assert!(!Reach::Public.admits_url(&url(refused)), "{refused}");
            assert!(Reach::Any.admits_url(&url(refused)), "{refused}");
        }
        assert!(!Reach::Public.admits_resolved(ip("127.0.0.1")), "a name resolving to loopback");
    }

    #[test]
    fn check_config_names_private_addresses_and_localhost() {
        let p = |u: &str| problem("forms.f.webhook.url", u, Reach::Public);
        assert_eq!(p("https://hooks.example.com/x"), None);
        assert_eq!(p("http://127.0.0.1:9/x"), None);
        let mapped = p("https://[::ffff:169.254.169.254]/").unwrap();
        assert!(mapped.starts_with("forms.f.webhook.url: [::ffff:a9fe:a9fe] is a private"), "{mapped}");
        assert!(p("https://100.100.100.200/").unwrap().contains("allow_private = true"));
        assert!(p("http://localhost:8080/").unwrap().contains("`localhost` resolves to a loopback"));
        assert!(p("http://api.LOCALHOST./").is_some());
        assert_eq!(problem("x", "http://localhost/", Reach::Any), None);
        assert_eq!(problem("x", "https://10.0.0.5/", Reach::Any), None);
    }

    #[tokio::test]
    async fn the_resolver_keeps_no_private_answer() {
        let name: Name = "localhost".parse().unwrap();
        let refused = Resolver.resolve(name).await.err().expect("localhost is loopback");
        assert!(is_private_refusal(&*refused), "{refused}");
    }
}
