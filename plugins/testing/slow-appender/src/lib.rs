//! Test plugin: six appenders, `slow1` … `slow6`, each of which spins on the CPU for
//! `ms` milliseconds (`[appenders.slowN] ms`, default 1000) and changes nothing. A graph
//! that runs all six costs six seconds of CPU unless the host stops it. Each checks the
//! host's cancellation flag while it spins and stops at once when it is set, saying so in
//! the log (`slowN stopped: the request is gone`).
#![forbid(unsafe_code)]

use std::time::{Duration, Instant};

use plugin_api::{AppenderData, Cancel, Graph, GraphAppender, GraphRequest, PluginError};

/// Spins for `ms` milliseconds per call.
pub struct Slow {
    name: &'static str,
    ms: u64,
}

impl GraphAppender for Slow {
    fn name(&self) -> &str {
        self.name
    }
    fn configure(&mut self, config: &serde_json::Value) -> Result<(), PluginError> {
        if let Some(ms) = config.get("ms") {
            self.ms = ms.as_u64().ok_or_else(|| {
                PluginError::invalid(format!("appenders.{}.ms must be a number", self.name))
            })?;
        }
        Ok(())
    }
    fn apply(
        &self,
        req: &GraphRequest,
        data: &AppenderData,
        g: &mut Graph,
    ) -> Result<(), PluginError> {
        self.apply_cancellable(req, data, g, &Cancel::new())
    }
    fn apply_cancellable(
        &self,
        _: &GraphRequest,
        _: &AppenderData,
        _: &mut Graph,
        cancel: &Cancel,
    ) -> Result<(), PluginError> {
        let until = Instant::now() + Duration::from_millis(self.ms);
        let mut x: u64 = 1;
        while Instant::now() < until {
            if cancel.is_cancelled() {
                tracing::info!("{} stopped: the request is gone", self.name);
                return Err(PluginError::cancelled());
            }
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        Ok(())
    }
}

plugin_api::register_appender!(Slow { name: "slow1", ms: 1000 });
plugin_api::register_appender!(Slow { name: "slow2", ms: 1000 });
plugin_api::register_appender!(Slow { name: "slow3", ms: 1000 });
plugin_api::register_appender!(Slow { name: "slow4", ms: 1000 });
plugin_api::register_appender!(Slow { name: "slow5", ms: 1000 });
plugin_api::register_appender!(Slow { name: "slow6", ms: 1000 });
plugin_api::export_plugin!(name: "slow-appender", version: env!("CARGO_PKG_VERSION"));
