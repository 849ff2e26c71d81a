//! The workers inside `serve` pace themselves while requests are being answered: one batch
//! per `poll_ms`, and full speed as soon as no request is in flight.

use std::time::Duration;

use onceform::base::traffic::Traffic;

use crate::on_both_backends;
use crate::support::delivery::spawn_delivery_app;
use crate::support::{inquiry, new_key, Backend};

on_both_backends!(a_worker_beside_requests_delivers_one_batch_per_poll_while_they_last);

async fn a_worker_beside_requests_delivers_one_batch_per_poll_while_they_last(backend: Backend) {
    let d = spawn_delivery_app(backend, |c| {
        c.worker.concurrency = 1; // a batch is one record
        c.worker.poll_ms = 3_000;
    })
    .await;
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Paced, please")).await.status(), 201);
    let sent = || async { d.app.effects_of(&key).await.iter().filter(|(_, state)| state == "SENT").count() };
    assert_eq!(sent().await, 0);

    let traffic = Traffic::default();
    let request = traffic.enter(); // a request being answered
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let worker = d.worker().beside(traffic.clone());
    let running = tokio::spawn(async move { worker.run(stopped).await });
    // The SENT count once it reaches `n` (or after 10 s).
    let reaches = |n| async move {
        for _ in 0..200 {
            if sent().await >= n {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        sent().await
    };
    assert_eq!(reaches(1).await, 1, "the first batch goes at once");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sent().await, 1, "while a request is in flight, the next batch waits for the poll");

    drop(request);
    assert_eq!(reaches(3).await, 3, "with no request in flight, the rest goes after the poll");
    let _ = stop.send(true);
    running.await.unwrap();
}
