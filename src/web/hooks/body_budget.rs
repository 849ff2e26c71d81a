//! How many bytes of unverified webhook bodies the server holds at once. A delivery reserves
//! its body's size (its `Content-Length`, else its source's `max_body_bytes`) before a byte
//! of it is read, from a budget per client address and a budget in total, and gives it back
//! once its signature is checked or the request ends, however it ends. A delivery that
//! cannot get its share is answered 503 with `Retry-After` at once, its body unread.
//!
//! A signature can only be checked once the whole body is in, so stalled unauthenticated
//! posts used to pile up: 400 of 250 KB raised the server's memory from 34 to 172 MiB, and
//! it stayed at 152 MiB (issue 45). Now they hold at most the budget, and the reading
//! deadline (10 s) cuts each of them.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};

use crate::config::proxies::client_bucket;

/// The least a client address may hold: four bodies of the default limit (256 KiB).
pub const PER_CLIENT_FLOOR: usize = 1024 * 1024;

/// The least all clients together may hold.
pub const TOTAL_FLOOR: usize = 16 * 1024 * 1024;

/// The budgets and what is reserved of them.
#[derive(Debug)]
pub struct BodyBudget {
    per_client: usize,
    total: usize,
    used: Mutex<Used>,
}

#[derive(Debug, Default)]
struct Used {
    total: usize,
    /// By client address (an IPv6 client by its /64).
    by_client: HashMap<IpAddr, usize>,
}

impl Default for BodyBudget {
    fn default() -> Self {
        BodyBudget::for_largest_body(0)
    }
}

impl BodyBudget {
    /// The budgets for sources whose largest body limit is `largest` bytes: per client the
    /// larger of `PER_CLIENT_FLOOR` and one such body; in total the larger of `TOTAL_FLOOR`
    /// and four clients' worth.
    pub fn for_largest_body(largest: usize) -> BodyBudget {
        let per_client = PER_CLIENT_FLOOR.max(largest);
        BodyBudget::new(per_client, TOTAL_FLOOR.max(per_client.saturating_mul(4)))
    }

    pub fn new(per_client: usize, total: usize) -> BodyBudget {
        BodyBudget { per_client, total, used: Mutex::default() }
    }

    /// `bytes` of the budget for a body from `client` (`None`: no peer address known), or
    /// `None` when the client's budget or the total would be exceeded.
    pub fn reserve(self: &Arc<Self>, client: Option<IpAddr>, bytes: usize) -> Option<Reservation> {
        let client = client.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), client_bucket);
        let Ok(mut used) = self.used.lock() else { return None };
        let held = used.by_client.get(&client).copied().unwrap_or(0);
        if held.saturating_add(bytes) > self.per_client || used.total.saturating_add(bytes) > self.total {
            return None;
        }
        used.total += bytes;
        used.by_client.insert(client, held + bytes);
        Some(Reservation { budget: self.clone(), client, bytes })
    }

    /// What is reserved in total (for tests and the log).
    pub fn reserved(&self) -> usize {
        self.used.lock().map(|u| u.total).unwrap_or(0)
    }

    fn release(&self, client: IpAddr, bytes: usize) {
        let Ok(mut used) = self.used.lock() else { return };
        used.total = used.total.saturating_sub(bytes);
        if let Some(held) = used.by_client.get_mut(&client) {
            *held = held.saturating_sub(bytes);
            if *held == 0 {
                used.by_client.remove(&client);
            }
        }
    }
}

/// A body's share of the budget, given back when dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<BodyBudget>,
    client: IpAddr,
    bytes: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.release(self.client, self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn a_client_and_all_clients_hold_at_most_their_budget_until_they_let_go() {
        let budget = Arc::new(BodyBudget::new(1000, 2500));
        let a: Vec<Reservation> = (0..4).map(|_| budget.reserve(ip("192.0.2.1"), 250).unwrap()).collect();
        assert!(budget.reserve(ip("192.0.2.1"), 1).is_none(), "the client's budget is spent");
        let b = budget.reserve(ip("192.0.2.2"), 1000).unwrap();
        assert!(budget.reserve(ip("192.0.2.3"), 501).is_none(), "the total is nearly spent");
        let c = budget.reserve(ip("192.0.2.3"), 500).unwrap();
        assert_eq!(budget.reserved(), 2500);
        drop(a);
        assert_eq!(budget.reserved(), 1500);
        assert!(budget.reserve(ip("192.0.2.1"), 1000).is_some(), "given back, and given back again");
        drop((b, c));
        assert_eq!(budget.reserved(), 0);
    }

    #[test]
    fn an_ipv6_client_is_one_client_across_its_64() {
        let budget = Arc::new(BodyBudget::new(1000, 1_000_000));
        let _one = budget.reserve(ip("2001:db8::1"), 600).unwrap();
        assert!(budget.reserve(ip("2001:db8::2"), 600).is_none());
        assert!(budget.reserve(ip("2001:db8:0:1::1"), 600).is_some());
    }

    #[test]
    fn a_large_source_limit_raises_both_budgets() {
        let budget = BodyBudget::for_largest_body(256 * 1024);
        assert_eq!((budget.per_client, budget.total), (PER_CLIENT_FLOOR, TOTAL_FLOOR));
        let big = BodyBudget::for_largest_body(10 * 1024 * 1024);
        assert_eq!((big.per_client, big.total), (10 * 1024 * 1024, 40 * 1024 * 1024));
    }
}
