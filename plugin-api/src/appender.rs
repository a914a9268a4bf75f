//! Graph appenders: declare inputs, then transform the graph. No I/O of their own.

use std::sync::RwLock;

use abi_stable::{
    StableAbi, sabi_trait,
    sabi_trait::TD_Opaque,
    std_types::{RBox, RResult, RStr, RString, RVec},
};

use crate::{
    cancel::Cancel,
    cluster::{ClusterData, ClusterKind},
    graph::{Graph, GraphRequest},
    guard::{guard, parse_config},
    metrics::{MetricQuery, QueryResult},
    types::PluginError,
};

/// What an appender needs the host to fetch before [`GraphAppender::apply`] runs.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Default)]
pub struct AppenderInputs {
    /// Cluster data kinds to read.
    pub cluster: RVec<ClusterKind>,
    /// Metric queries to run; results arrive in the same order.
    pub queries: RVec<MetricQuery>,
}

/// The fetched inputs, handed to [`GraphAppender::apply`].
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Default)]
pub struct AppenderData {
    /// Cluster data for the declared kinds.
    pub cluster: ClusterData,
    /// One result per declared query, in declaration order.
    pub results: RVec<QueryResult>,
}

/// The stable-ABI appender interface (what crosses the boundary).
///
/// Plugin authors implement [`GraphAppender`] instead; [`register_appender!`](crate::register_appender)
/// wraps it in an adapter whose every method catches panics.
#[sabi_trait]
pub trait Appender: Send + Sync {
    /// The appender's unique name (used in the `appenders` query parameter).
    fn name(&self) -> RResult<RString, PluginError>;
    /// Receives the appender's config table (`[appenders.<name>]`) as JSON, once at start-up.
    fn configure(&self, config_json: RStr<'_>) -> RResult<(), PluginError>;
    /// Declares the inputs for one request.
    fn inputs(&self, req: &GraphRequest) -> RResult<AppenderInputs, PluginError>;
    /// Transforms the graph.
    #[sabi(last_prefix_field)]
    fn apply(
        &self,
        req: &GraphRequest,
        data: &AppenderData,
        graph: &mut Graph,
    ) -> RResult<(), PluginError>;
    /// Like `apply`, and may stop early once `cancel` is set (the request is gone: its client
    /// left or it timed out; the host then discards the graph). Appended in 0.1.2, as
    /// `MetricsBackend::query_cancellable` was: for an older library, which lacks this vtable
    /// entry, the trait object runs this default body on the host's side.
    fn apply_cancellable(
        &self,
        req: &GraphRequest,
        data: &AppenderData,
        graph: &mut Graph,
        cancel: Cancel,
    ) -> RResult<(), PluginError> {
        drop(cancel);
        self.apply(req, data, graph)
    }
}

/// An appender as it crosses the boundary: a boxed stable trait object.
pub type AppenderBox = Appender_TO<'static, RBox<()>>;

/// What a plugin author implements for a graph appender.
pub trait GraphAppender: Send + Sync + 'static {
    /// The appender's unique name.
    fn name(&self) -> &str;
    /// Takes the `[appenders.<name>]` table. The default accepts only an empty table.
    fn configure(&mut self, config: &serde_json::Value) -> Result<(), PluginError> {
        match config.as_object() {
            Some(m) if !m.is_empty() => Err(PluginError::invalid(format!(
                "unknown key `{}`",
                m.keys().next().map(String::as_str).unwrap_or_default()
            ))),
            _ => Ok(()),
        }
    }
    /// Declares the cluster data and metric queries this request needs.
    fn inputs(&self, _req: &GraphRequest) -> Result<AppenderInputs, PluginError> {
        Ok(AppenderInputs::default())
    }
    /// Transforms the graph using only `data`.
    fn apply(
        &self,
        req: &GraphRequest,
        data: &AppenderData,
        graph: &mut Graph,
    ) -> Result<(), PluginError>;
    /// What the host calls: [`GraphAppender::apply`], which a long-running appender may
    /// override to check `cancel.is_cancelled()` now and then and return
    /// `PluginError::cancelled()`. The default runs `apply` to its end.
    fn apply_cancellable(
        &self,
        req: &GraphRequest,
        data: &AppenderData,
        graph: &mut Graph,
        cancel: &Cancel,
    ) -> Result<(), PluginError> {
        let _ = cancel;
        self.apply(req, data, graph)
    }
}

/// Wraps a [`GraphAppender`] so that every entry point catches panics.
pub struct AppenderAdapter<T>(RwLock<T>);

impl<T: GraphAppender> AppenderAdapter<T> {
    /// Boxes `inner` as a stable trait object.
    pub fn boxed(inner: T) -> AppenderBox {
        Appender_TO::from_value(AppenderAdapter(RwLock::new(inner)), TD_Opaque)
    }
    fn read(&self) -> std::sync::RwLockReadGuard<'_, T> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T: GraphAppender> Appender for AppenderAdapter<T> {
    fn name(&self) -> RResult<RString, PluginError> {
        guard("appender name", || Ok(RString::from(self.read().name())))
    }
    fn configure(&self, config_json: RStr<'_>) -> RResult<(), PluginError> {
        guard("appender configure", || {
            let cfg = parse_config(config_json.as_str())?;
            self.0.write().unwrap_or_else(|e| e.into_inner()).configure(&cfg)
        })
    }
    fn inputs(&self, req: &GraphRequest) -> RResult<AppenderInputs, PluginError> {
        guard("appender inputs", || self.read().inputs(req))
    }
    fn apply(
        &self,
        req: &GraphRequest,
        data: &AppenderData,
        graph: &mut Graph,
    ) -> RResult<(), PluginError> {
        guard("appender apply", || self.read().apply(req, data, graph))
    }
    fn apply_cancellable(
        &self,
        req: &GraphRequest,
        data: &AppenderData,
        graph: &mut Graph,
        cancel: Cancel,
    ) -> RResult<(), PluginError> {
        guard("appender apply", || self.read().apply_cancellable(req, data, graph, &cancel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GraphType, compliance};

    /// Removes one node per call to say which entry point ran: the first node for
    /// `apply`, the last for the cancellable one, and none when it saw the flag set.
    struct Trim;

    impl GraphAppender for Trim {
        fn name(&self) -> &str {
            "trim"
        }
        fn apply(
            &self,
            _: &GraphRequest,
            _: &AppenderData,
            g: &mut Graph,
        ) -> Result<(), PluginError> {
            g.nodes.remove(0);
            Ok(())
        }
        fn apply_cancellable(
            &self,
            _: &GraphRequest,
            _: &AppenderData,
            g: &mut Graph,
            cancel: &Cancel,
        ) -> Result<(), PluginError> {
            if cancel.is_cancelled() {
                return Err(PluginError::cancelled());
            }
            g.nodes.pop();
            Ok(())
        }
    }

    /// Implements `apply` alone, as every appender written before 0.1.2.
    struct OnlyApply;

    impl GraphAppender for OnlyApply {
        fn name(&self) -> &str {
            "only-apply"
        }
        fn apply(
            &self,
            _: &GraphRequest,
            _: &AppenderData,
            g: &mut Graph,
        ) -> Result<(), PluginError> {
            g.nodes.remove(0);
            Ok(())
        }
    }

    fn run(a: &AppenderBox, cancel: Option<Cancel>) -> (RResult<(), PluginError>, Graph) {
        let req = compliance::request(GraphType::Workload, false);
        let mut g = compliance::sample_graph();
        let r = match cancel {
            Some(c) => a.apply_cancellable(&req, &AppenderData::default(), &mut g, c),
            None => a.apply(&req, &AppenderData::default(), &mut g),
        };
        (r, g)
    }

    #[test]
    fn the_flag_crosses_the_boundary() {
        let a = AppenderAdapter::boxed(Trim);
        let whole = compliance::sample_graph();
        let cancel = Cancel::new();
        let (r, g) = run(&a, Some(cancel.clone()));
        assert!(r.is_ok());
        assert_eq!(g.nodes.as_slice(), &whole.nodes[..whole.nodes.len() - 1], "the last went");
        cancel.cancel();
        let (r, g) = run(&a, Some(cancel));
        assert_eq!(r.into_result().map_err(|e| e.kind), Err(crate::ErrorKind::Timeout));
        assert_eq!(g.nodes, whole.nodes, "stopped before touching the graph");
        let (_, g) = run(&a, None);
        assert_eq!(g.nodes.as_slice(), &whole.nodes[1..], "apply stays as it was");
    }

    #[test]
    fn an_appender_with_apply_alone_answers_the_cancellable_call() {
        let cancel = Cancel::new();
        cancel.cancel();
        let (r, g) = run(&AppenderAdapter::boxed(OnlyApply), Some(cancel));
        assert!(r.is_ok());
        assert_eq!(g.nodes.as_slice(), &compliance::sample_graph().nodes[1..]);
    }
}
