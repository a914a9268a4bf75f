//! The backend answer cache (`[metrics] cache_ttl`, `cache_max_bytes`): many viewers
//! refreshing the same graph send its queries once per TTL, not once per viewer.
//!
//! Every entry lives exactly one TTL, so insertion order is expiry order: a map plus a
//! queue in insertion order is the whole eviction policy (expired first, then oldest while
//! over the byte bound). Handlers align "now" to the TTL ([`AnswerCache::align`]) so that
//! requests within one time bucket send identical queries.
//!
//! An answer for a time off that grid (a client's explicit `queryTime`, which clients such
//! as Kiali's console set to their own "now" on every refresh) is kept only when its query
//! is asked a second time within one TTL, as `proxy_cache_min_uses 2` does in nginx: kept at
//! once, answers that no one asks for again held the bound's worth of memory, and every new
//! answer then took fresh pages from the OS.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use plugin_api::{MetricQuery, QueryResult, QueryTime};

struct Entry {
    answer: Arc<QueryResult>,
    expires: Instant,
    bytes: u64,
    /// Its record in `order`.
    seq: u64,
}

#[derive(Default)]
struct Inner {
    map: HashMap<String, Entry>,
    /// Keys in insertion order with their expiry and sequence number (a key replaced
    /// later leaves a stale record here, recognised by its sequence number).
    order: VecDeque<(String, Instant, u64)>,
    bytes: u64,
    next_seq: u64,
    /// Misses of off-grid queries within the last TTL, by key hash: the first sighting.
    seen: HashMap<u64, Instant>,
}

/// Most first sightings remembered; past it, expired ones go, then (if need be) all.
const MAX_SEEN: usize = 16_384;

/// Answers of past-time queries, kept for one TTL within a byte bound.
pub struct AnswerCache {
    ttl: Duration,
    max_bytes: u64,
    inner: Mutex<Inner>,
    hasher: std::hash::RandomState,
}

impl AnswerCache {
    /// `None` when `ttl` is zero (the cache is off).
    pub fn new(ttl: Duration, max_bytes: u64) -> Option<AnswerCache> {
        (!ttl.is_zero()).then(|| AnswerCache {
            ttl,
            max_bytes,
            inner: Mutex::default(),
            hasher: std::hash::RandomState::new(),
        })
    }

    /// `now` rounded down to the TTL (whole seconds): the evaluation time of requests
    /// whose time defaults to now.
    pub fn align(&self, now: i64) -> i64 {
        let step = self.ttl.as_secs().max(1) as i64;
        now - now.rem_euclid(step)
    }

    /// Whether an answer to `q` may be kept: its (last) evaluation time is not in the future.
    pub fn accepts(q: &MetricQuery, now: i64) -> bool {
        last_time(q) <= now
    }

    /// After a miss: whether the answer to `q` (under `key`) is to be kept when it arrives.
    /// On the TTL's grid (a time that defaulted to now), always; off it, when the same query
    /// missed before within one TTL.
    pub fn admits(&self, key: &str, q: &MetricQuery, now: Instant) -> bool {
        let t = last_time(q);
        if self.align(t) == t {
            return true;
        }
        let hash = std::hash::BuildHasher::hash_one(&self.hasher, key);
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.seen.get(&hash).is_some_and(|first| now < *first + self.ttl) {
            return true;
        }
        if inner.seen.len() >= MAX_SEEN {
            let ttl = self.ttl;
            inner.seen.retain(|_, first| now < *first + ttl);
            if inner.seen.len() >= MAX_SEEN {
                inner.seen.clear();
            }
        }
        inner.seen.insert(hash, now);
        false
    }

    /// The kept answer for `key`, if it has not expired.
    pub fn get(&self, key: &str, now: Instant) -> Option<Arc<QueryResult>> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.map.get(key).filter(|e| e.expires > now).map(|e| e.answer.clone())
    }

    /// Keeps `answer` for one TTL from `now`; evicts expired, then oldest, entries to stay
    /// within the byte bound. An answer larger than the whole bound is not kept. Returns the
    /// entries and (estimated) bytes held now, for the owner's self-metrics (`None`: unchanged).
    pub fn insert(
        &self,
        key: String,
        answer: Arc<QueryResult>,
        now: Instant,
    ) -> Option<(usize, u64)> {
        let bytes = estimate_bytes(&key, &answer);
        if bytes > self.max_bytes {
            return None;
        }
        // What leaves the cache is freed on the dropper thread, after the lock is let go:
        // freeing a big answer (a hundred thousand strings) must hold up neither the other
        // queries' lookups nor the async worker that inserts.
        let mut evicted = Vec::new();
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let inner = &mut *guard;
        if let Some(old) = inner.map.remove(&key) {
            inner.bytes -= old.bytes;
            evicted.push(old);
        }
        while let Some((_, expires, _)) = inner.order.front() {
            if *expires > now && inner.bytes + bytes <= self.max_bytes {
                break;
            }
            let Some((k, _, seq)) = inner.order.pop_front() else { break };
            if inner.map.get(&k).is_some_and(|e| e.seq == seq)
                && let Some(e) = inner.map.remove(&k)
            {
                inner.bytes -= e.bytes;
                evicted.push(e);
            }
        }
        let expires = now + self.ttl;
        let seq = inner.next_seq;
        inner.next_seq += 1;
        inner.order.push_back((key.clone(), expires, seq));
        inner.map.insert(key, Entry { answer, expires, bytes, seq });
        inner.bytes += bytes;
        let held = (inner.map.len(), inner.bytes);
        drop(guard);
        if !evicted.is_empty() {
            crate::dropper::drop_later(evicted);
        }
        Some(held)
    }
}

/// The query's (last) evaluation time.
fn last_time(q: &MetricQuery) -> i64 {
    match q.time {
        QueryTime::Instant(t) => t,
        QueryTime::Range { end, .. } => end,
    }
}

/// What an answer holds on the heap, as allocated: every buffer at its capacity, rounded to
/// the allocator's 16-byte granules plus one granule of overhead. Counting text lengths and a
/// flat cost per label instead undercounted a large answer about 2.5-fold, so a 64 MiB bound
/// held some 160 MiB.
fn estimate_bytes(key: &str, r: &QueryResult) -> u64 {
    fn block(bytes: usize) -> usize {
        if bytes == 0 { 0 } else { bytes.div_ceil(16) * 16 + 16 }
    }
    let series: usize = r
        .series
        .iter()
        .map(|s| {
            let [text, ends] = s.labels.heap_bytes();
            block(text)
                + block(ends)
                + block(s.samples.capacity() * std::mem::size_of::<plugin_api::Sample>())
        })
        .sum();
    let list = block(r.series.capacity() * std::mem::size_of::<plugin_api::Series>());
    // The key twice (map and queue), the entry, and the Arc around the answer.
    (block(key.len()) * 2 + series + list + 128) as u64
}

#[cfg(test)]
#[path = "answer_cache_reference.rs"]
mod reference;

#[cfg(test)]
mod tests {
    use plugin_api::{
        HistogramStat, LabelSet, RangeFunc, Sample, Series, abi_stable::std_types::RVec,
    };

    use super::*;

    fn answer(labels: usize) -> Arc<QueryResult> {
        let series = Series {
            labels: (0..labels).map(|i| (format!("l{i}"), "v")).collect(),
            samples: vec![Sample { t: 0.0, v: 1.0 }].into(),
        };
        Arc::new(QueryResult { series: vec![series].into() })
    }

    fn query(time: QueryTime) -> MetricQuery {
        MetricQuery {
            metric: "m".into(),
            matchers: Vec::new().into(),
            func: RangeFunc::None,
            window_secs: 0,
            group_by: None.into(),
            histogram: HistogramStat::None,
            time,
        }
    }

    #[test]
    fn entries_expire_after_the_ttl() {
        let c = AnswerCache::new(Duration::from_secs(10), 1 << 20).unwrap();
        let t0 = Instant::now();
        c.insert("a".into(), answer(1), t0);
        assert!(c.get("a", t0 + Duration::from_secs(9)).is_some());
        assert!(c.get("a", t0 + Duration::from_secs(10)).is_none());
        assert!(c.get("b", t0).is_none());
    }

    #[test]
    fn the_byte_bound_evicts_the_oldest_and_refuses_huge_answers() {
        let one = estimate_bytes("k0", &answer(10));
        let c = AnswerCache::new(Duration::from_secs(60), one * 3).unwrap();
        let t0 = Instant::now();
        for i in 0..5 {
            c.insert(format!("k{i}"), answer(10), t0);
        }
        let kept: Vec<bool> = (0..5).map(|i| c.get(&format!("k{i}"), t0).is_some()).collect();
        assert_eq!(kept, [false, false, true, true, true]);
        assert!(c.inner.lock().unwrap().bytes <= one * 3);
        c.insert("huge".into(), answer(10_000), t0);
        assert!(c.get("huge", t0).is_none());
        // Replacing the oldest key keeps one entry, its byte count, and (past its stale
        // queue record) the new answer: the next eviction takes k3.
        c.insert("k2".into(), answer(10), t0);
        assert_eq!(c.inner.lock().unwrap().map.len(), 3);
        assert_eq!(c.inner.lock().unwrap().bytes, one * 3);
        c.insert("k5".into(), answer(10), t0);
        let kept: Vec<bool> = (2..6).map(|i| c.get(&format!("k{i}"), t0).is_some()).collect();
        assert_eq!(kept, [true, false, true, true]);
    }

    #[test]
    fn zero_ttl_is_off_and_now_is_aligned_to_the_ttl() {
        assert!(AnswerCache::new(Duration::ZERO, 1).is_none());
        let c = AnswerCache::new(Duration::from_secs(10), 1).unwrap();
        assert_eq!(c.align(1_700_000_009), 1_700_000_000);
        assert_eq!(c.align(1_700_000_010), 1_700_000_010);
    }

    #[test]
    fn off_grid_answers_are_kept_from_their_second_miss_within_a_ttl() {
        let c = AnswerCache::new(Duration::from_secs(10), 1 << 20).unwrap();
        let t0 = Instant::now();
        // A time that defaulted to now (on the TTL's grid): kept at once.
        let on_grid =
            query(QueryTime::Range { start: 1_699_999_400, end: 1_700_000_000, step: 15 });
        assert!(c.admits(&on_grid.cache_key(), &on_grid, t0));
        // An explicit time off the grid: not at its first miss, at its second.
        let off = query(QueryTime::Instant(1_700_000_003));
        let key = off.cache_key();
        assert!(!c.admits(&key, &off, t0));
        assert!(c.admits(&key, &off, t0 + Duration::from_secs(9)));
        // Another off-grid query has its own count.
        let other = query(QueryTime::Instant(1_700_000_004));
        assert!(!c.admits(&other.cache_key(), &other, t0));
        // A TTL after the first miss, the count starts again.
        let later = t0 + Duration::from_secs(10);
        assert!(!c.admits(&other.cache_key(), &other, later));
        assert!(c.admits(&other.cache_key(), &other, later + Duration::from_secs(1)));
    }

    #[test]
    fn the_size_estimate_counts_what_is_allocated_not_just_the_text() {
        // A dozen labels in buffers with room to spare, as a decoder growing them would
        // leave them, and the same held at their exact size.
        let dozen = || (0..12).map(|i| (format!("destination_label_{i:02}"), "ns-1"));
        let text: usize = 12 * ("destination_label_00".len() + "ns-1".len());
        let mut roomy = LabelSet::with_capacity(16, 1024);
        roomy.extend(dozen());
        let mut labels = LabelSet::with_capacity(12, text);
        labels.extend(dozen());
        assert_eq!(labels.spare_bytes(), 0);
        let [_, ends] = labels.heap_bytes();
        let one =
            |labels| QueryResult { series: vec![Series { labels, samples: RVec::new() }].into() };
        let (roomy, exact) = (estimate_bytes("k", &one(roomy)), estimate_bytes("k", &one(labels)));
        assert!(exact as usize > text + ends, "{exact}");
        // The spare room is counted: 1024 - 288 bytes of text, and 4 labels' worth of ends.
        assert_eq!(roomy - exact, (1024 - text + 4 * ends / 12) as u64);
    }

    #[test]
    fn only_answers_for_past_times_are_kept() {
        assert!(AnswerCache::accepts(&query(QueryTime::Instant(100)), 100));
        assert!(!AnswerCache::accepts(&query(QueryTime::Instant(101)), 100));
        assert!(!AnswerCache::accepts(
            &query(QueryTime::Range { start: 0, end: 200, step: 10 }),
            100
        ));
        assert!(AnswerCache::accepts(
            &query(QueryTime::Range { start: 0, end: 90, step: 10 }),
            100
        ));
    }
}
