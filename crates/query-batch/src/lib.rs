//! A typed batch of metric queries.
//!
//! A request that needs the answers of several owners (the graph's traffic plan and each
//! appender's declared inputs; the health of a target and of each of its services) sends
//! all their queries together. Each owner registers its queries with [`QueryBatch::add`]
//! and keeps the [`Handle`] it gets; once the batch is answered, [`Answers::get`] hands it
//! back exactly its own answers, in the order it declared them. Nothing is cut back out of
//! the combined list by position or count, and the answers are shared ([`Arc`]), never
//! copied.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::sync::Arc;

use plugin_api::{MetricQuery, QueryResult};

/// One owner's place in a batch: the range of its queries.
///
/// A handle only means something to the batch that made it (and to that batch's answers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handle {
    start: usize,
    end: usize,
}

impl Handle {
    /// How many queries the owner registered.
    pub fn len(&self) -> usize {
        self.end - self.start
    }
    /// Whether the owner registered no query.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

/// The queries of one request, grouped by owner.
#[derive(Debug, Default, Clone)]
pub struct QueryBatch {
    queries: Vec<MetricQuery>,
}

/// The answers did not match the batch (a metrics engine bug, never a user's doing).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the batch sent {sent} queries but got {answered} answers")]
pub struct CountMismatch {
    /// Queries in the batch.
    pub sent: usize,
    /// Answers handed back.
    pub answered: usize,
}

impl QueryBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers one owner's queries; the handle gets exactly their answers back.
    pub fn add(&mut self, queries: impl IntoIterator<Item = MetricQuery>) -> Handle {
        let start = self.queries.len();
        self.queries.extend(queries);
        Handle { start, end: self.queries.len() }
    }

    /// Every query of the batch, in registration order.
    pub fn queries(&self) -> &[MetricQuery] {
        &self.queries
    }

    /// Hands the queries over to be sent, with what will pair them with their answers.
    pub fn send(self) -> (Vec<MetricQuery>, Pending) {
        let sent = self.queries.len();
        (self.queries, Pending { sent })
    }
}

/// A sent batch, waiting for its answers.
#[derive(Debug)]
pub struct Pending {
    sent: usize,
}

impl Pending {
    /// Pairs the batch with its answers (`results[i]` answers query `i`).
    pub fn answered(self, results: Vec<Arc<QueryResult>>) -> Result<Answers, CountMismatch> {
        if results.len() != self.sent {
            return Err(CountMismatch { sent: self.sent, answered: results.len() });
        }
        Ok(Answers { results, empty: Arc::default() })
    }
}

/// The answers of a batch, each owner's reachable by its [`Handle`].
#[derive(Debug, Clone)]
pub struct Answers {
    results: Vec<Arc<QueryResult>>,
    /// What a taken answer leaves behind.
    empty: Arc<QueryResult>,
}

impl Answers {
    /// The owner's answers, one per query it registered, in its order.
    pub fn get(&self, h: Handle) -> &[Arc<QueryResult>] {
        self.results.get(h.start..h.end).unwrap_or(&[])
    }

    /// Moves the owner's answers out (for an owner that must own them, or that hands them
    /// to another thread); each leaves an empty answer behind.
    pub fn take(&mut self, h: Handle) -> Vec<Arc<QueryResult>> {
        let empty = &self.empty;
        match self.results.get_mut(h.start..h.end) {
            Some(slots) => slots.iter_mut().map(|s| std::mem::replace(s, empty.clone())).collect(),
            None => Vec::new(),
        }
    }
}

/// An answer the caller may change: moved out of its `Arc` when no one else holds it
/// (the usual case once a batch is answered), copied only when another owner or request
/// shares it.
pub fn owned(answer: Arc<QueryResult>) -> QueryResult {
    Arc::unwrap_or_clone(answer)
}

#[cfg(test)]
mod tests {
    use plugin_api::{HistogramStat, QueryTime, RangeFunc, Sample, Series};

    use super::*;

    fn query(metric: &str) -> MetricQuery {
        MetricQuery {
            metric: metric.into(),
            matchers: Vec::new().into(),
            func: RangeFunc::Rate,
            window_secs: 60,
            group_by: None.into(),
            histogram: HistogramStat::None,
            time: QueryTime::Instant(0),
        }
    }

    /// Answers every query with one series whose value is the query's metric length.
    fn answer(qs: &[MetricQuery]) -> Vec<Arc<QueryResult>> {
        qs.iter()
            .map(|q| {
                let v = q.metric.len() as f64;
                Arc::new(QueryResult {
                    series: vec![Series {
                        labels: Default::default(),
                        samples: vec![Sample { t: 0.0, v }].into(),
                    }]
                    .into(),
                })
            })
            .collect()
    }

    fn values(rs: &[Arc<QueryResult>]) -> Vec<f64> {
        rs.iter().map(|r| r.series[0].samples[0].v).collect()
    }

    #[test]
    fn each_owner_gets_exactly_its_own_answers() {
        let mut batch = QueryBatch::new();
        let a = batch.add([query("a"), query("aa")]);
        let none = batch.add([]);
        let b = batch.add([query("bbb")]);
        let c = batch.add([query("cccc"), query("ccccc"), query("cccccc")]);
        assert_eq!((a.len(), none.len(), b.len(), c.len()), (2, 0, 1, 3));
        assert!(none.is_empty());
        let (qs, pending) = batch.send();
        assert_eq!(qs.len(), 6);
        let answers = pending.answered(answer(&qs)).unwrap();
        assert_eq!(values(answers.get(a)), [1.0, 2.0]);
        assert!(answers.get(none).is_empty());
        assert_eq!(values(answers.get(b)), [3.0]);
        assert_eq!(values(answers.get(c)), [4.0, 5.0, 6.0]);
    }

    #[test]
    fn answers_are_shared_and_taking_moves_them_without_a_copy() {
        let mut batch = QueryBatch::new();
        let a = batch.add([query("a")]);
        let b = batch.add([query("bb")]);
        let (qs, pending) = batch.send();
        let results = answer(&qs);
        let first = Arc::as_ptr(&results[0]);
        let first_series = results[0].series.as_ptr();
        let mut answers = pending.answered(results).unwrap();
        assert_eq!(Arc::as_ptr(&answers.get(a)[0]), first, "shared, not copied");
        let taken = answers.take(a);
        assert_eq!(Arc::as_ptr(&taken[0]), first);
        assert!(answers.get(a)[0].series.is_empty(), "a taken answer leaves an empty one");
        assert_eq!(values(answers.get(b)), [2.0], "other owners keep theirs");
        let mut it = taken.into_iter();
        let own = owned(it.next().unwrap());
        assert_eq!(
            own.series.as_ptr(),
            first_series,
            "the sole holder gets the answer itself, not a copy"
        );
    }

    #[test]
    fn a_wrong_number_of_answers_is_an_error_not_a_misassignment() {
        let mut batch = QueryBatch::new();
        batch.add([query("a"), query("b")]);
        let (qs, pending) = batch.send();
        let mut rs = answer(&qs);
        rs.pop();
        assert_eq!(pending.answered(rs).unwrap_err(), CountMismatch { sent: 2, answered: 1 });
    }
}
