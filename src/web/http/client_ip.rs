//! The client's address behind reverse proxies.
//!
//! Rate limits and sign-in throttling count per client address. Behind a reverse proxy every
//! request comes from the proxy, so the proxy's `X-Forwarded-For` names the client, but only
//! a proxy the operator trusts may say so: anyone can send the header.

use std::net::IpAddr;

use actix_web::http::header::HeaderMap;
use actix_web::HttpRequest;

use crate::config::proxies::canonical;
pub use crate::config::proxies::client_bucket;
pub use crate::config::TrustedProxies;

impl TrustedProxies {
    /// The address a request counts against.
    pub fn client_of(&self, req: &HttpRequest) -> Option<IpAddr> {
        self.client(req.peer_addr().map(|a| a.ip()), req.headers())
    }

    /// The peer, unless the peer is a trusted proxy: then, walking `X-Forwarded-For` from
    /// the right (the hop nearest to us), the first address that is not a trusted proxy.
    /// An entry that is not an address ends the walk at the last trusted hop.
    pub fn client(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> Option<IpAddr> {
        let mut client = peer?;
        if !self.trusts(&client) {
            return Some(client);
        }
        let hops: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect();
        for hop in hops.iter().rev() {
            let Ok(ip) = hop.parse::<IpAddr>() else { break };
            client = canonical(ip);
            if !self.trusts(&client) {
                break;
            }
        }
        Some(client)
    }
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::{HeaderName, HeaderValue};

    use super::*;

    fn proxies(entries: &[&str]) -> TrustedProxies {
        TrustedProxies::parse(&entries.iter().map(|e| e.to_string()).collect::<Vec<_>>()).unwrap()
    }

    fn forwarded(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(HeaderName::from_static("x-forwarded-for"), HeaderValue::from_str(v).unwrap());
        }
        headers
    }

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn without_trusted_proxies_the_header_is_ignored() {
        let none = TrustedProxies::default();
        assert_eq!(none.client(ip("203.0.113.7"), &forwarded(&["198.51.100.1"])), ip("203.0.113.7"));
        assert_eq!(none.client(None, &forwarded(&["198.51.100.1"])), None);
    }

    #[test]
    fn a_peer_that_is_not_trusted_is_the_client_whatever_it_claims() {
        let trusted = proxies(&["127.0.0.1"]);
        assert_eq!(trusted.client(ip("203.0.113.7"), &forwarded(&["198.51.100.1"])), ip("203.0.113.7"));
    }

    #[test]
    fn behind_trusted_proxies_the_nearest_untrusted_hop_is_the_client() {
        let trusted = proxies(&["127.0.0.1", "10.0.0.0/8"]);
        let peer = ip("127.0.0.1");
        // A client-supplied (spoofed) first entry is not believed: the proxies appended the rest.
        let chain = forwarded(&["1.2.3.4, 198.51.100.9", "10.1.2.3"]);
        assert_eq!(trusted.client(peer, &chain), ip("198.51.100.9"));
        assert_eq!(trusted.client(peer, &forwarded(&["198.51.100.9"])), ip("198.51.100.9"));
        assert_eq!(trusted.client(peer, &HeaderMap::new()), peer, "no header: the proxy itself");
        assert_eq!(trusted.client(peer, &forwarded(&["10.0.0.5"])), ip("10.0.0.5"), "all hops trusted");
        assert_eq!(
            trusted.client(peer, &forwarded(&["198.51.100.9, garbage, 10.0.0.5"])),
            ip("10.0.0.5"),
            "a malformed hop ends the walk at the last trusted one"
        );
        assert_eq!(trusted.client(ip("::ffff:127.0.0.1"), &chain), ip("198.51.100.9"), "IPv4-mapped peer");
        assert_eq!(trusted.client(peer, &forwarded(&["2001:db8::1"])), ip("2001:db8::1"));
    }

    #[test]
    fn ipv6_clients_are_bucketed_by_64() {
        assert_eq!(
            client_bucket("2001:db8:1:2:aaaa::1".parse().unwrap()),
            "2001:db8:1:2::".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            client_bucket("::ffff:192.0.2.1".parse().unwrap()),
            "192.0.2.1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(client_bucket("192.0.2.1".parse().unwrap()), "192.0.2.1".parse::<IpAddr>().unwrap());
    }
}
