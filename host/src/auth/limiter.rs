//! Limits on password checks (strategy `login`).
//!
//! - Per client (an IPv4 address, an IPv6 /64, or the client a trusted proxy names in
//!   `X-Forwarded-For`): `auth.max_failed_logins` failures a minute, then 429.
//! - All clients together: `auth.max_failed_logins_total` failures a minute; beyond it a
//!   client that has failed in the minute is refused, while one that has not still gets its
//!   password checked (a correct password from an innocent address always works).
//! - An attempt is counted *before* the check (and given back when it succeeds), so parallel
//!   guesses cannot all slip in before the first failure is recorded.
//! - At most `auth.login_concurrency` checks run at once (each Argon2 check allocates its
//!   memory cost); more answer 429 at once instead of queueing.
//!
//! The per-client map is an LRU of [`CLIENTS`] entries: bounded, O(1) per attempt, no scan.

use std::{
    net::{IpAddr, Ipv4Addr, Ipv6Addr},
    num::NonZeroUsize,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use ipnet::IpNet;
use lru::LruCache;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use warp::http::HeaderMap;

use crate::error::ApiError;

/// The window failed logins are counted in.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Clients remembered; the least recently seen is forgotten first.
const CLIENTS: usize = 65_536;

#[derive(Clone, Copy)]
struct Window {
    start: Instant,
    n: u32,
}

impl Window {
    fn fresh(now: Instant) -> Window {
        Window { start: now, n: 0 }
    }

    /// Starts a new window once the old one is over.
    fn roll(&mut self, now: Instant) {
        if now.duration_since(self.start) >= WINDOW {
            *self = Window::fresh(now);
        }
    }

    fn left(&self, now: Instant) -> u64 {
        let left = WINDOW.saturating_sub(now.duration_since(self.start));
        left.as_secs_f64().ceil().max(1.0) as u64
    }
}

struct Failures {
    clients: LruCache<IpAddr, Window>,
    all: Window,
}

pub struct LoginGate {
    per_client: u32,
    total: u32,
    failures: Mutex<Failures>,
    checks: Arc<Semaphore>,
}

/// A reserved attempt: counted as a failure unless [`Attempt::succeeded`] says otherwise.
pub struct Attempt<'g> {
    gate: &'g LoginGate,
    client: IpAddr,
    client_window: Instant,
    all_window: Instant,
    check: Option<OwnedSemaphorePermit>,
}

impl Attempt<'_> {
    /// The slot of the check: held by whatever runs it, so that a check that outlives its
    /// request (the client went away) still counts against `auth.login_concurrency`.
    pub fn slot(&mut self) -> Option<OwnedSemaphorePermit> {
        self.check.take()
    }

    /// The password was right: the reserved failure is given back.
    pub fn succeeded(self) {
        self.gate.give_back(self.client, self.client_window, self.all_window);
    }
}

fn too_many(message: &str, retry_after: u64) -> ApiError {
    ApiError::TooManyRequests { message: message.into(), retry_after }
}

impl LoginGate {
    pub fn new(per_client: u32, total: u32, concurrency: usize) -> LoginGate {
        let now = Instant::now();
        LoginGate {
            per_client,
            total,
            failures: Mutex::new(Failures {
                clients: LruCache::new(NonZeroUsize::new(CLIENTS).unwrap_or(NonZeroUsize::MIN)),
                all: Window::fresh(now),
            }),
            checks: Arc::new(Semaphore::new(concurrency.max(1))),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Failures> {
        self.failures.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves one attempt for `client`, or says why it may not try now. A `costly` check
    /// (Argon2) also takes one of the `login_concurrency` slots; a plain digest compare
    /// costs microseconds and runs without one.
    pub fn begin(&self, client: IpAddr, costly: bool) -> Result<Attempt<'_>, ApiError> {
        let now = Instant::now();
        let (client_window, all_window) = {
            let mut f = self.lock();
            f.all.roll(now);
            let all = f.all;
            let w = f.clients.get_or_insert_mut(client, || Window::fresh(now));
            w.roll(now);
            if w.n >= self.per_client {
                return Err(too_many(
                    "too many failed logins from this address; try again later",
                    w.left(now),
                ));
            }
            if all.n >= self.total && w.n > 0 {
                return Err(too_many(
                    "too many failed logins; this address has failed too: try again later",
                    all.left(now),
                ));
            }
            w.n += 1;
            let start = w.start;
            f.all.n = f.all.n.saturating_add(1);
            (start, f.all.start)
        };
        let attempt = |check| Attempt { gate: self, client, client_window, all_window, check };
        if !costly {
            return Ok(attempt(None));
        }
        match self.checks.clone().try_acquire_owned() {
            Ok(check) => Ok(attempt(Some(check))),
            Err(_) => {
                // Not tried: the reservation is given back.
                self.give_back(client, client_window, all_window);
                Err(too_many("too many logins are being checked at once; try again", 1))
            }
        }
    }

    fn give_back(&self, client: IpAddr, client_window: Instant, all_window: Instant) {
        let mut f = self.lock();
        if let Some(w) = f.clients.peek_mut(&client)
            && w.start == client_window
        {
            w.n = w.n.saturating_sub(1);
        }
        if f.all.start == all_window {
            f.all.n = f.all.n.saturating_sub(1);
        }
    }
}

/// The key the limits count a client under: the peer, or the client named in
/// `X-Forwarded-For` when the peer is a trusted proxy; IPv6 by its /64.
pub fn client_key(peer: Option<IpAddr>, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let Some(peer) = peer.map(canonical) else {
        return IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    };
    let client = if trusted.iter().any(|n| n.contains(&peer)) {
        forwarded_client(headers, trusted).unwrap_or(peer)
    } else {
        peer
    };
    match client {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 => v4,
    }
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

/// The right-most address in `X-Forwarded-For` that is not a trusted proxy: the hops to its
/// right were added by proxies we trust, everything to its left the client could write.
fn forwarded_client(headers: &HeaderMap, trusted: &[IpNet]) -> Option<IpAddr> {
    let hops: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    let mut last = None;
    for hop in hops.iter().rev() {
        let ip = canonical(hop.parse::<IpAddr>().ok()?);
        last = Some(ip);
        if !trusted.iter().any(|n| n.contains(&ip)) {
            return Some(ip);
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn attempts_are_reserved_before_the_check_and_given_back_on_success() {
        let g = LoginGate::new(3, 100, 10);
        let a = ip("10.0.0.1");
        // Three attempts in flight at once: a fourth is refused before any has failed.
        let held: Vec<_> = (0..3).map(|_| g.begin(a, true).expect("under the limit")).collect();
        assert!(matches!(g.begin(a, true), Err(ApiError::TooManyRequests { .. })));
        for t in held {
            t.succeeded();
        }
        assert!(g.begin(a, true).is_ok(), "successes do not count");
    }

    #[test]
    fn failures_block_the_address_not_its_neighbours() {
        let g = LoginGate::new(3, 100, 10);
        for _ in 0..3 {
            drop(g.begin(ip("10.0.0.1"), true).unwrap());
        }
        match g.begin(ip("10.0.0.1"), true) {
            Err(ApiError::TooManyRequests { retry_after, .. }) => {
                assert!((1..=60).contains(&retry_after))
            }
            _ => panic!("blocked after three failures"),
        }
        assert!(g.begin(ip("10.0.0.2"), true).is_ok());
    }

    #[test]
    fn the_global_budget_refuses_failed_addresses_only() {
        let g = LoginGate::new(5, 4, 10);
        for i in 0..4 {
            drop(g.begin(ip(&format!("10.0.1.{i}")), true).unwrap());
        }
        assert!(g.begin(ip("10.0.1.0"), true).is_err(), "failed before, budget spent");
        let fresh = g.begin(ip("10.0.2.1"), true).expect("never failed: still checked");
        fresh.succeeded();
    }

    #[test]
    fn checks_beyond_the_concurrency_answer_429_and_are_not_counted() {
        let g = LoginGate::new(5, 100, 2);
        let a = g.begin(ip("10.0.0.1"), true).unwrap();
        let b = g.begin(ip("10.0.0.2"), true).unwrap();
        match g.begin(ip("10.0.0.3"), true) {
            Err(ApiError::TooManyRequests { retry_after, .. }) => assert_eq!(retry_after, 1),
            _ => panic!("a third check at once"),
        }
        a.succeeded();
        b.succeeded();
        for _ in 0..5 {
            drop(g.begin(ip("10.0.0.3"), true).unwrap());
        }
        assert!(g.begin(ip("10.0.0.3"), true).is_err(), "the refused one did not count");
        // Plain (cheap) checks take no slot.
        let _held =
            (g.begin(ip("10.0.0.4"), true).unwrap(), g.begin(ip("10.0.0.5"), true).unwrap());
        assert!(g.begin(ip("10.0.0.6"), false).is_ok());
    }

    #[test]
    fn ipv6_counts_by_64_and_proxies_are_believed_only_when_trusted() {
        let none = HeaderMap::new();
        let k = |s: &str| client_key(Some(ip(s)), &none, &[]);
        assert_eq!(k("2001:db8:1:2:aaaa::1"), k("2001:db8:1:2:bbbb::2"));
        assert_ne!(k("2001:db8:1:2::1"), k("2001:db8:1:3::1"));
        assert_eq!(k("::ffff:10.1.2.3"), ip("10.1.2.3"));
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", "203.0.113.9, 198.51.100.7, 10.0.0.5".parse().unwrap());
        let proxies: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        assert_eq!(client_key(Some(ip("10.0.0.2")), &h, &proxies), ip("198.51.100.7"));
        assert_eq!(client_key(Some(ip("192.0.2.1")), &h, &proxies), ip("192.0.2.1"));
        assert_eq!(client_key(Some(ip("10.0.0.2")), &none, &proxies), ip("10.0.0.2"));
        h.insert("x-forwarded-for", "junk".parse().unwrap());
        assert_eq!(client_key(Some(ip("10.0.0.2")), &h, &proxies), ip("10.0.0.2"));
    }
}
