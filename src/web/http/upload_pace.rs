//! The slowest a request holding an upload turn (`Files::turn`) may send: after a grace
//! period it must keep up `MIN_RATE` bytes a second on average since its turn began, or its
//! body ends as a late one (408) and the turn goes to the next upload waiting. A client
//! trickling a byte a second cannot keep the turns from those who send.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::error::PayloadError;
use actix_web::web::Bytes;
use futures_util::Stream;
use tokio::time::{Instant, Sleep};

/// What a request may take before it must keep up the rate: a slow start, a phone's radio.
const GRACE: Duration = Duration::from_secs(5);

/// Bytes a second an upload keeps up on average (a phone on a poor 3G link sends more).
const MIN_RATE: f64 = 8.0 * 1024.0;

/// A body that ends as late (the body deadline's error, so 408) once it falls behind.
pub struct Paced<S> {
    inner: S,
    grace: Duration,
    /// Bytes a second.
    rate: f64,
    start: Instant,
    received: u64,
    timer: Pin<Box<Sleep>>,
    behind: bool,
}

impl<S> Paced<S> {
    /// `inner`, paced from now (when the turn was taken).
    pub fn new(inner: S) -> Paced<S> {
        Paced::at(inner, GRACE, MIN_RATE)
    }

    fn at(inner: S, grace: Duration, rate: f64) -> Paced<S> {
        let start = Instant::now();
        let timer = Box::pin(tokio::time::sleep_until(start + grace));
        Paced { inner, grace, rate, start, received: 0, timer, behind: false }
    }

    /// When the next byte is due at the slowest.
    fn due(&self) -> Instant {
        self.start + self.grace + Duration::from_secs_f64(self.received as f64 / self.rate)
    }
}

impl<S: Stream<Item = Result<Bytes, PayloadError>> + Unpin> Stream for Paced<S> {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.behind {
            return Poll::Ready(None);
        }
        if let Poll::Ready(item) = Pin::new(&mut self.inner).poll_next(cx) {
            if let Some(Ok(chunk)) = &item {
                self.received += chunk.len() as u64;
                let due = self.due();
                self.timer.as_mut().reset(due);
            }
            return Poll::Ready(item);
        }
        if self.timer.as_mut().poll(cx).is_ready() {
            self.behind = true;
            let error = std::io::Error::new(
                super::connections::DEADLINE_KIND,
                "the upload is slower than the slowest a turn allows",
            );
            return Poll::Ready(Some(Err(PayloadError::Io(error))));
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    /// A body sending `per_tick` bytes every 20 ms, for ever.
    fn trickle(per_tick: usize) -> impl Stream<Item = Result<Bytes, PayloadError>> + Unpin {
        Box::pin(futures_util::stream::unfold((), move |()| async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Some((Ok(Bytes::from(vec![b'x'; per_tick])), ()))
        }))
    }

    #[tokio::test]
    async fn a_trickle_is_cut_after_the_grace_and_a_steady_sender_is_not() {
        let (grace, rate) = (Duration::from_millis(300), 1000.0);
        // 1 byte every 20 ms is 50 bytes a second: far below 1,000.
        let mut slow = Paced::at(trickle(1), grace, rate);
        let started = Instant::now();
        let ended = loop {
            match slow.next().await {
                Some(Ok(_)) => continue,
                other => break other,
            }
        };
        assert!(
            matches!(ended, Some(Err(PayloadError::Io(ref e))) if e.kind() == std::io::ErrorKind::TimedOut)
        );
        let took = started.elapsed();
        assert!(took >= grace && took < grace * 3, "{took:?}");
        assert!(slow.next().await.is_none(), "nothing more after the cut");

        // 40 bytes every 20 ms is 2,000 a second: above the minimum, for four graces.
        let mut steady = Paced::at(trickle(40), grace, rate);
        let until = Instant::now() + grace * 4;
        while Instant::now() < until {
            assert!(matches!(steady.next().await, Some(Ok(_))));
        }
    }
}
