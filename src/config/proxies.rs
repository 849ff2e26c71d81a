//! `server.trusted_proxies`: the reverse proxies whose `X-Forwarded-For` is believed (the
//! client's address behind them is resolved in `src/web/http/client_ip.rs`).

use std::net::IpAddr;

use ipnet::IpNet;

/// The proxies (addresses or CIDR ranges) whose `X-Forwarded-For` is believed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Parses `server.trusted_proxies`; the error names the first entry that is neither an
    /// address nor a CIDR range.
    pub fn parse(entries: &[String]) -> Result<TrustedProxies, String> {
        entries.iter().map(|e| parse_entry(e)).collect::<Result<_, _>>().map(TrustedProxies)
    }

    pub(crate) fn trusts(&self, ip: &IpAddr) -> bool {
        self.0.iter().any(|net| net.contains(&canonical(*ip)))
    }
}

fn parse_entry(entry: &str) -> Result<IpNet, String> {
    let entry = entry.trim();
    entry
        .parse::<IpNet>()
        .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
        .map_err(|_| format!("`{entry}` is not an IP address or CIDR range"))
}

/// An IPv4 address seen through an IPv6 socket (`::ffff:a.b.c.d`) as the IPv4 address.
pub(crate) fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The address a client's rate limits and sign-in throttling count against: an IPv4
/// address as it is, an IPv6 address by its /64 (one subscriber usually holds a whole /64,
/// so counting single addresses would give them 2^64 buckets).
pub fn client_bucket(ip: IpAddr) -> IpAddr {
    match canonical(ip) {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_addresses_or_ranges() {
        assert!(TrustedProxies::parse(&["::1".into(), "fd00::/8".into(), " 192.168.0.0/16 ".into()]).is_ok());
        assert_eq!(
            TrustedProxies::parse(&["127.0.0.1".into(), "proxy.local".into()]).unwrap_err(),
            "`proxy.local` is not an IP address or CIDR range"
        );
    }
}
