//! Requests in flight: the HTTP server counts them, and the workers inside `serve` read the
//! count to deliver at their poll pace while requests are being answered
//! (`services::worker`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The count of requests being answered; clones share it.
#[derive(Clone, Default)]
pub struct Traffic(Arc<AtomicUsize>);

/// One request in flight, until dropped (also when its client goes away mid-request).
pub struct InFlight(Arc<AtomicUsize>);

impl Traffic {
    pub fn enter(&self) -> InFlight {
        self.0.fetch_add(1, Ordering::Relaxed);
        InFlight(self.0.clone())
    }

    /// Whether any request is being answered now.
    pub fn busy(&self) -> bool {
        self.0.load(Ordering::Relaxed) > 0
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::Traffic;

    #[test]
    fn busy_while_any_request_is_in_flight() {
        let traffic = Traffic::default();
        let (a, b) = (traffic.enter(), traffic.clone().enter());
        drop(a);
        assert!(traffic.busy());
        drop(b);
        assert!(!traffic.busy());
    }
}
