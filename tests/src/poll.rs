//! Waiting, bounded, for something a test cannot be told about directly (a watch noticing an
//! outage, a status turning).

use std::time::{Duration, Instant};

/// Polls `check` every 100 ms for up to `limit`; the time it took, or a panic naming `what`.
pub async fn within(limit: Duration, what: &str, mut check: impl AsyncFnMut() -> bool) -> Duration {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check().await {
            return start.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within {limit:?}");
}
