//! A simulated mesh's traffic as a pure function of time.
//!
//! A [`Model`] is built from a [`topology::Topology`] and a start time. Every series is a
//! counter or a gauge whose value at a sample time depends only on that time and the start:
//! counters grow by a rate that is constant within one sample step and repeats every cycle
//! (the scenarios), so the value at step `i` is a closed form (whole cycles plus a prefix
//! sum), never a running total. Two programs that hold the same samples — the live
//! `simulator` backend and a Prometheus loaded with [`openmetrics::write`]'s file — therefore
//! hold bit-identical values, and answer every query the same.
//!
//! Samples lie on a grid of whole multiples of the step (Unix seconds); the cycle's phase
//! zero is the start time (rounded down to the grid).
#![forbid(unsafe_code)]

mod build;
pub mod openmetrics;
pub mod topology;

pub use topology::{Topology, TopologyError};

/// Seconds of traffic counted before the cycle's start, so counters stay far above zero
/// (Prometheus's extrapolation is then never cut at the zero point).
const HEADSTART_SECS: f64 = 86_400.0;

/// How a series' value moves over one cycle: per-step rates (counters) or values (gauges).
#[derive(Debug, Clone)]
pub enum Curve {
    /// The same every step.
    Const(f64),
    /// Step `j` of the cycle has `values[j]`; `prefix[m]` = sum of `values[..m]` × step.
    Cycle { values: Box<[f64]>, prefix: Box<[f64]> },
}

impl Curve {
    /// Collapses a cycle's values to [`Curve::Const`] when they are all equal.
    pub fn from_values(values: Vec<f64>, step: f64) -> Curve {
        if values.windows(2).all(|w| w[0] == w[1]) {
            return Curve::Const(values.first().copied().unwrap_or(0.0));
        }
        let mut prefix = Vec::with_capacity(values.len() + 1);
        let mut acc = 0.0;
        prefix.push(0.0);
        for v in &values {
            acc += v * step;
            prefix.push(acc);
        }
        Curve::Cycle { values: values.into(), prefix: prefix.into() }
    }

    /// The value during cycle step `j` (`0 <= j < n`).
    pub fn at(&self, j: usize) -> f64 {
        match self {
            Curve::Const(v) => *v,
            Curve::Cycle { values, .. } => values.get(j).copied().unwrap_or(0.0),
        }
    }

    /// The mean over a cycle of `n` steps.
    fn mean(&self, n: usize) -> f64 {
        match self {
            Curve::Const(v) => *v,
            Curve::Cycle { values, .. } => values.iter().sum::<f64>() / n.max(1) as f64,
        }
    }
}

/// Whether a series is a counter (its curve is a rate) or a gauge (its curve is the value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

/// One series of the model.
#[derive(Debug, Clone)]
pub struct SeriesSpec {
    /// The metric family (`# TYPE` name): the base name of a histogram or summary.
    pub family: String,
    /// `counter`, `gauge`, `histogram` or `summary`.
    pub family_type: &'static str,
    /// The sample name (`..._total`, `..._bucket` ...).
    pub name: String,
    /// Labels in the order Istio writes them.
    pub labels: Vec<(String, String)>,
    pub kind: Kind,
    pub curve: Curve,
}

/// A topology turned into series, anchored at a start time.
#[derive(Debug, Clone)]
pub struct Model {
    /// Seconds between samples.
    pub step: i64,
    /// Steps in one cycle.
    pub cycle_steps: usize,
    /// The cycle's phase zero: Unix seconds, a multiple of `step`.
    pub start: i64,
    /// Every series.
    pub series: Vec<SeriesSpec>,
}

impl Model {
    /// The model of `topology` with phase zero at `start` (rounded down to a whole step).
    pub fn new(topology: &Topology, start: i64) -> Model {
        let step = topology.step_seconds as i64;
        let cycle_steps = (topology.cycle_minutes * 60 / topology.step_seconds) as usize;
        let series = build::series(topology, cycle_steps);
        Model { step, cycle_steps, start: start.div_euclid(step) * step, series }
    }

    /// The first sample time at or after `t` (Unix seconds).
    pub fn grid_ceil(&self, t: i64) -> i64 {
        -((-t).div_euclid(self.step) * self.step)
    }

    /// The last sample time at or before `t`.
    pub fn grid_floor(&self, t: i64) -> i64 {
        t.div_euclid(self.step) * self.step
    }

    /// The cycle step (`0..cycle_steps`) that the interval ending at sample time `t` belongs
    /// to, i.e. the scenario state that produced the traffic counted at `t`.
    pub fn phase_step(&self, t: i64) -> usize {
        ((t - self.start) / self.step - 1).rem_euclid(self.cycle_steps as i64) as usize
    }

    /// The value of series `s` at sample time `t` (a multiple of the step).
    pub fn value(&self, s: &SeriesSpec, t: i64) -> f64 {
        let i = (t - self.start).div_euclid(self.step);
        match s.kind {
            Kind::Gauge => s.curve.at(i.rem_euclid(self.cycle_steps as i64) as usize),
            Kind::Counter => {
                let n = self.cycle_steps as i64;
                let head = s.curve.mean(self.cycle_steps) * HEADSTART_SECS;
                match &s.curve {
                    Curve::Const(rate) => head + rate * (i * self.step) as f64,
                    Curve::Cycle { prefix, .. } => {
                        let whole = prefix[self.cycle_steps];
                        head + i.div_euclid(n) as f64 * whole + prefix[i.rem_euclid(n) as usize]
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
