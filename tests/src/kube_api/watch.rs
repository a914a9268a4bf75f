//! Watches: the history or a snapshot first, then live events, bookmarks, and the end at
//! the timeout (a 410 for a resourceVersion older than the history).

use std::{
    collections::HashMap, convert::Infallible, sync::Arc, sync::atomic::Ordering, time::Duration,
};

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::Shared;
use super::requests::{Filter_, status};
use super::resources::{ResourceDef, api_version};

fn line(ev_type: &str, object: &Value) -> Bytes {
    let mut s = json!({"type": ev_type, "object": object}).to_string();
    s.push('\n');
    Bytes::from(s)
}

pub(super) fn watch(
    s: &Arc<Shared>,
    def: &'static ResourceDef,
    av: String,
    filter: Filter_,
    q: &HashMap<String, String>,
) -> warp::reply::Response {
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(s.opts.watch_max)
        .min(s.opts.watch_max);
    let bookmarks = q.get("allowWatchBookmarks").is_some_and(|b| b == "true");
    let from: Option<u64> =
        q.get("resourceVersion").and_then(|r| r.parse().ok()).filter(|r| *r > 0);
    s.watches.fetch_add(1, Ordering::SeqCst);
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(1024);
    // Subscribe before reading the history so nothing falls between the two.
    let mut live = s.events.subscribe();
    let stamp = |o: &Value| {
        let mut o = o.clone();
        o["apiVersion"] = json!(av);
        o["kind"] = json!(def.kind);
        o
    };
    let mut first: Vec<Bytes> = Vec::new();
    let mut expired = false;
    let mut seen;
    {
        let st = s.store.lock().unwrap();
        seen = st.rv;
        match from {
            Some(rv) if rv < st.log_start => {
                let gone = status(
                    410,
                    "Expired",
                    &format!("too old resource version: {rv} ({})", st.log_start),
                );
                first.push(line("ERROR", &gone));
                expired = true;
                s.expired.fetch_add(1, Ordering::SeqCst);
            }
            Some(rv) => {
                for e in st
                    .log
                    .iter()
                    .filter(|e| e.rv > rv && e.group == def.group && e.plural == def.plural)
                {
                    if filter.matches(&e.object) {
                        first.push(line(e.kind, &stamp(&e.object)));
                    }
                }
            }
            None => {
                for ((g, p, _, _), o) in &st.objects {
                    if *g == def.group && *p == def.plural && filter.matches(o) {
                        first.push(line("ADDED", &stamp(o)));
                    }
                }
            }
        }
    }
    let start_rv = seen;
    let every = s.opts.bookmark_every;
    let bookmark = move |rv: u64| {
        line(
            "BOOKMARK",
            &json!({"kind": def.kind, "apiVersion": api_version(def.group, def.versions[0]), "metadata": {"resourceVersion": rv.to_string()}}),
        )
    };
    let stamp_owned = {
        let av = av.clone();
        move |o: &Value| {
            let mut o = o.clone();
            o["apiVersion"] = json!(av);
            o["kind"] = json!(def.kind);
            o
        }
    };
    let shared = s.clone();
    tokio::spawn(async move {
        for b in first {
            if tx.send(Ok(b)).await.is_err() {
                return;
            }
        }
        if expired {
            return;
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let mut tick = tokio::time::interval(every);
        tick.tick().await;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => return,
                _ = tick.tick(), if bookmarks => {
                    if tx.send(Ok(bookmark(seen))).await.is_err() { return; }
                    shared.bookmarks.fetch_add(1, Ordering::SeqCst);
                }
                ev = live.recv() => match ev {
                    Ok(e) => {
                        // Already sent from the history or the snapshot.
                        if e.rv <= start_rv { continue; }
                        seen = seen.max(e.rv);
                        if e.group == def.group
                            && e.plural == def.plural
                            && filter.matches(&e.object)
                            && tx.send(Ok(line(e.kind, &stamp_owned(&e.object)))).await.is_err()
                        {
                            return;
                        }
                    }
                    // Too slow a reader: end the watch, the client resumes with a list if needed.
                    Err(_) => return,
                }
            }
        }
    });
    let body =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
    let mut r = warp::reply::Reply::into_response(warp::reply::stream(body));
    r.headers_mut()
        .insert("content-type", warp::http::HeaderValue::from_static("application/json"));
    r
}
