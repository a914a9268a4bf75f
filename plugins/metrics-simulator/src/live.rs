//! The live store: the model's samples over a sliding window, advanced on demand.

use std::sync::RwLock;

use metrics_simulation::Model;
use metrics_store::{
    eval::{self, Stop},
    store::Store,
};
use plugin_api::{MetricQuery, PluginError, QueryResult};

/// Self-metrics: the store's size, one sample per step like every series.
const SELF_SERIES: [&str; 3] =
    ["meshlens_simulator_samples", "meshlens_simulator_series", "meshlens_simulator_bytes"];

struct State {
    store: Store,
    /// Store ids of the model's series, in model order.
    ids: Vec<u32>,
    /// Store ids of [`SELF_SERIES`].
    own: [u32; 3],
    /// The newest sample time held (Unix seconds).
    end: i64,
}

/// The model and its window of samples.
pub struct Live {
    model: Model,
    window: i64,
    state: RwLock<State>,
}

impl Live {
    /// A store holding the window that ends at `now`.
    pub fn new(model: Model, window_secs: i64, now: i64) -> Live {
        let mut store = Store::default();
        let mut ids = Vec::with_capacity(model.series.len());
        for s in &model.series {
            let name = store.intern(&s.name);
            let labels = s.labels.iter().map(|(k, v)| (store.intern(k), store.intern(v))).collect();
            ids.push(store.series_id(name, labels));
        }
        let own = SELF_SERIES.map(|n| {
            let name = store.intern(n);
            store.series_id(name, Vec::new())
        });
        store.finish();
        // Exactly one window of samples per series, so pushing new and dropping old never
        // reallocates: memory is the same after one hour and after a week.
        store.reserve_each((window_secs / model.step) as usize + 1);
        let end = model.grid_floor(now) - window_secs;
        let live =
            Live { window: window_secs, state: RwLock::new(State { store, ids, own, end }), model };
        live.advance_to(now);
        live
    }

    pub fn series_count(&self) -> usize {
        self.read().store.series.len()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Generates samples up to `now` (on the grid) and drops those that left the window.
    pub fn advance_to(&self, now: i64) {
        let target = self.model.grid_floor(now);
        if self.read().end >= target {
            return;
        }
        let mut st = self.state.write().unwrap_or_else(|e| e.into_inner());
        if st.end >= target {
            return; // another query advanced it meanwhile
        }
        let keep_from = target - self.window + self.model.step;
        st.store.drop_before(keep_from as f64 * 1000.0);
        let step = self.model.step;
        let first = (st.end + step).max(keep_from);
        let State { store, ids, own, end } = &mut *st;
        let mut t = first;
        while t <= target {
            let t_ms = t as f64 * 1000.0;
            for (s, id) in self.model.series.iter().zip(ids.iter()) {
                store.push(*id, t_ms, self.model.value(s, t));
            }
            let sizes = [store.sample_count() + 3, store.series.len(), store.approx_bytes()];
            for (id, v) in own.iter().zip(sizes) {
                store.push(*id, t_ms, v as f64);
            }
            t += step;
        }
        *end = target;
    }

    /// Answers a query from the current window.
    pub fn evaluate(
        &self,
        query: &MetricQuery,
        stop: Stop<'_>,
        max_series: usize,
    ) -> Result<QueryResult, PluginError> {
        eval::evaluate_until(&self.read().store, query, stop, max_series)
    }
}
