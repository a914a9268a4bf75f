//! The answer cache against a reference implementation, moka (docs/exceptions.md): the
//! same hits and misses under the same TTL, and the one place where they part, which is
//! why the cache is written here: under its byte bound it always keeps the answer just
//! fetched (the one the next viewer asks for), where moka's admission policy may refuse it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use plugin_api::{QueryResult, Sample, Series};

use super::{AnswerCache, estimate_bytes};

fn answer(labels: usize) -> Arc<QueryResult> {
    let series = Series {
        labels: (0..labels).map(|i| (format!("l{i}"), "v")).collect(),
        samples: vec![Sample { t: 0.0, v: 1.0 }].into(),
    };
    Arc::new(QueryResult { series: vec![series].into() })
}

fn moka(ttl: Duration, max_bytes: u64) -> moka::sync::Cache<String, Arc<QueryResult>> {
    moka::sync::Cache::builder()
        .max_capacity(max_bytes)
        .weigher(|k: &String, v: &Arc<QueryResult>| {
            u32::try_from(estimate_bytes(k, v)).unwrap_or(u32::MAX)
        })
        .time_to_live(ttl)
        .build()
}

/// Viewers asking for random keys; a miss fetches and inserts. `true` is a hit.
fn viewers(
    ours: &AnswerCache,
    theirs: &moka::sync::Cache<String, Arc<QueryResult>>,
    seed: &mut u64,
) -> (Vec<bool>, Vec<bool>) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..400 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let key = format!("q{}", *seed % 60);
        let now = Instant::now();
        let hit = ours.get(&key, now).is_some();
        if !hit {
            ours.insert(key.clone(), answer(4), now);
        }
        a.push(hit);
        let hit = theirs.get(&key).is_some();
        if !hit {
            theirs.insert(key, answer(4));
        }
        b.push(hit);
    }
    (a, b)
}

#[test]
fn hits_and_misses_equal_mokas_under_the_same_ttl() {
    // A TTL far longer than one round of requests, so timing on a loaded host cannot matter.
    let ttl = Duration::from_secs(2);
    let ours = AnswerCache::new(ttl, 64 << 20).expect("on");
    let theirs = moka(ttl, 64 << 20);
    let mut seed = 0x9e37_79b9_7f4a_7c15;
    let (a, b) = viewers(&ours, &theirs, &mut seed);
    assert_eq!(a, b, "within one TTL");
    assert_eq!(a.iter().filter(|h| !**h).count(), 60, "each key is fetched once per TTL");
    std::thread::sleep(ttl + Duration::from_millis(300));
    let (a, b) = viewers(&ours, &theirs, &mut seed);
    assert_eq!(a, b, "after the TTL");
    assert_eq!(a.iter().filter(|h| !**h).count(), 60, "every key expired and is fetched again");
}

#[test]
fn under_the_byte_bound_the_newest_answer_is_kept_where_moka_refuses_it() {
    let one = estimate_bytes("k0", &answer(10));
    let ttl = Duration::from_secs(60);
    let ours = AnswerCache::new(ttl, one * 4).expect("on");
    let theirs = moka(ttl, one * 4);
    let now = Instant::now();
    // Four graphs' answers, viewed often; then a new graph's answer arrives.
    for i in 0..4 {
        let key = format!("k{i}");
        ours.insert(key.clone(), answer(10), now);
        theirs.insert(key.clone(), answer(10));
        for _ in 0..5 {
            assert!(ours.get(&key, now).is_some());
            assert!(theirs.get(&key).is_some());
        }
    }
    ours.insert("new".into(), answer(10), now);
    theirs.insert("new".into(), answer(10));
    theirs.run_pending_tasks();
    // Ours: the bound holds at once and the new answer (the next viewer's) is kept.
    assert!(ours.get("new", now).is_some());
    assert!(ours.inner.lock().expect("lock").bytes <= one * 4);
    // moka (TinyLFU): a candidate seen less often than the entry it would evict is not
    // admitted, so every viewer of the new graph would query the backend again.
    assert!(theirs.get("new").is_none(), "moka admitted the new answer");
    assert!(theirs.weighted_size() <= one * 4);
}
