//! The in-memory series store: interned strings, compact samples, an index by metric name.
//!
//! Every label name and value is stored once in a symbol table; a series keeps its labels as
//! pairs of symbol ids (8 bytes a label) and its samples as `(time in ms, value)` pairs of
//! `f64` (16 bytes a sample; times are whole milliseconds, exact in an f64).

use std::collections::HashMap;

/// Symbol id standing for the label name `__name__` in result keys.
pub const NAME: u32 = u32::MAX;

/// One series: its metric name, its other labels (sorted by name text), its samples.
pub struct SeriesData {
    /// Symbol of the metric name.
    pub name: u32,
    /// `(label name, label value)` symbols, sorted by the name's text.
    pub labels: Box<[(u32, u32)]>,
    /// `(t_ms, value)` in increasing time order.
    pub samples: Vec<(f64, f64)>,
}

impl SeriesData {
    /// The value symbol of label `name`, if the series has it.
    pub fn label(&self, name: u32) -> Option<u32> {
        if name == NAME {
            return Some(self.name);
        }
        self.labels.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }
}

/// A series' identity while loading: metric name and sorted labels.
type SeriesKey = (u32, Box<[(u32, u32)]>);

/// All series of one file.
#[derive(Default)]
pub struct Store {
    syms: Vec<Box<str>>,
    sym_ids: HashMap<Box<str>, u32>,
    /// The series, by id.
    pub series: Vec<SeriesData>,
    by_name: HashMap<u32, Vec<u32>>,
    /// Only used while loading: finds a series by its full label set.
    lookup: HashMap<SeriesKey, u32>,
    /// Samples dropped because they were not after the series' previous sample.
    pub dropped_out_of_order: u64,
}

impl Store {
    /// Interns `text`, returning its symbol id.
    pub fn intern(&mut self, text: &str) -> u32 {
        if let Some(id) = self.sym_ids.get(text) {
            return *id;
        }
        let id = self.syms.len() as u32;
        let boxed: Box<str> = text.into();
        self.syms.push(boxed.clone());
        self.sym_ids.insert(boxed, id);
        id
    }

    /// The symbol id of `text`, if any series uses it.
    pub fn sym(&self, text: &str) -> Option<u32> {
        if text == "__name__" {
            return Some(NAME);
        }
        self.sym_ids.get(text).copied()
    }

    /// The text of a symbol.
    pub fn text(&self, id: u32) -> &str {
        if id == NAME {
            return "__name__";
        }
        self.syms.get(id as usize).map(|s| &**s).unwrap_or("")
    }

    /// The series id for a label set, creating the series when new. `labels` is sorted here.
    pub fn series_id(&mut self, name: u32, mut labels: Vec<(u32, u32)>) -> u32 {
        labels.sort_by(|a, b| self.syms[a.0 as usize].cmp(&self.syms[b.0 as usize]));
        let key = (name, labels.into_boxed_slice());
        if let Some(id) = self.lookup.get(&key) {
            return *id;
        }
        let id = self.series.len() as u32;
        self.series.push(SeriesData { name, labels: key.1.clone(), samples: Vec::new() });
        self.by_name.entry(name).or_default().push(id);
        self.lookup.insert(key, id);
        id
    }

    /// Appends a sample; one that is not after the series' last sample is dropped, as
    /// Prometheus's TSDB drops out-of-order samples.
    pub fn push(&mut self, series: u32, t_ms: f64, v: f64) {
        let Some(s) = self.series.get_mut(series as usize) else { return };
        if s.samples.last().is_some_and(|(last, _)| *last >= t_ms) {
            self.dropped_out_of_order += 1;
            return;
        }
        s.samples.push((t_ms, v));
    }

    /// Ends loading: frees the lookup table and spare capacity.
    pub fn finish(&mut self) {
        self.lookup = HashMap::new();
        for s in &mut self.series {
            s.samples.shrink_to_fit();
        }
        self.syms.shrink_to_fit();
    }

    /// Gives every series room for `samples` samples up front, so that a store kept to a
    /// fixed window (push new, [`drop_before`](Self::drop_before) old) never reallocates.
    pub fn reserve_each(&mut self, samples: usize) {
        for s in &mut self.series {
            s.samples.reserve_exact(samples.saturating_sub(s.samples.len()));
        }
    }

    /// Drops every sample older than `t_ms` (keeps the series and their capacity).
    pub fn drop_before(&mut self, t_ms: f64) {
        for s in &mut self.series {
            let old = s.samples.partition_point(|(t, _)| *t < t_ms);
            s.samples.drain(..old);
        }
    }

    /// Ids of the series named `name`.
    pub fn named(&self, name: &str) -> &[u32] {
        self.sym_ids
            .get(name)
            .and_then(|id| self.by_name.get(id))
            .map(|v| v.as_slice())
            .unwrap_or(&[])
    }

    /// Number of samples held.
    pub fn sample_count(&self) -> usize {
        self.series.iter().map(|s| s.samples.len()).sum()
    }

    /// Approximate bytes held by the store's data structures.
    pub fn approx_bytes(&self) -> usize {
        let syms: usize = self.syms.iter().map(|s| s.len() * 2 + 16 + 24).sum();
        let series: usize = self
            .series
            .iter()
            .map(|s| {
                std::mem::size_of::<SeriesData>() + s.labels.len() * 8 + s.samples.capacity() * 16
            })
            .sum();
        let index: usize = self.by_name.values().map(|v| v.capacity() * 4 + 48).sum();
        syms + series + index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_kept_by_drop_before_never_grows() {
        let mut store = Store::default();
        let name = store.intern("m");
        let id = store.series_id(name, vec![]);
        store.finish();
        store.reserve_each(4);
        let bytes = store.approx_bytes();
        for i in 0..100 {
            let t = i as f64 * 1000.0;
            store.drop_before(t - 3000.0);
            store.push(id, t, i as f64);
            assert!(store.sample_count() <= 4);
            assert_eq!(store.approx_bytes(), bytes, "sample {i}");
        }
        assert_eq!(store.series[0].samples.first(), Some(&(96_000.0, 96.0)));
    }
}
