//! Small stable types shared by every component kind.

use abi_stable::{StableAbi, std_types::RString};

/// One label pair (`name="value"`), as on a metric series or a Kubernetes object.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Label {
    /// Label name.
    pub name: RString,
    /// Label value.
    pub value: RString,
}

impl Label {
    /// Builds a label from anything string-like.
    pub fn new(name: impl Into<RString>, value: impl Into<RString>) -> Self {
        Label { name: name.into(), value: value.into() }
    }
}

/// Finds the value of `name` in a label list.
pub fn label_value<'a>(labels: &'a [Label], name: &str) -> Option<&'a str> {
    labels.iter().find(|l| l.name.as_str() == name).map(|l| l.value.as_str())
}

/// A value a plugin attaches to a node or an edge; it reaches the JSON as is.
#[repr(C, u8)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub enum Value {
    /// JSON `true` / `false`.
    Bool(bool),
    /// A JSON number.
    Number(f64),
    /// A JSON string.
    Text(RString),
}

/// A named [`Value`]: the open key/value list of nodes and edges.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct Field {
    /// The JSON key. Keys of the spec's own fields are reserved and ignored.
    pub key: RString,
    /// The value.
    pub value: Value,
}

/// What went wrong inside a plugin call; the host maps the kind to an HTTP status.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input (a query, a config table) is not acceptable: HTTP 400, or a start-up error.
    InvalidInput,
    /// A store or service the plugin needs cannot be reached: HTTP 503.
    Unavailable,
    /// The plugin's deadline passed: HTTP 503.
    Timeout,
    /// Anything else: HTTP 500.
    Internal,
    /// The plugin panicked; the panic was caught on the plugin's side: HTTP 500.
    Panic,
}

/// The error value every plugin entry point returns instead of panicking.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct PluginError {
    /// The class of failure.
    pub kind: ErrorKind,
    /// A human-readable message.
    pub message: RString,
}

impl PluginError {
    /// An error of the given kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        PluginError { kind, message: RString::from(message.into()) }
    }
    /// [`ErrorKind::InvalidInput`].
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidInput, message)
    }
    /// [`ErrorKind::Unavailable`].
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unavailable, message)
    }
    /// [`ErrorKind::Timeout`].
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Timeout, message)
    }
    /// [`ErrorKind::Internal`].
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
    /// A call stopped because the host set its [`Cancel`](crate::Cancel) flag. Its kind is
    /// [`ErrorKind::Timeout`] (the request's time is over; a new kind would not load in
    /// older hosts), and the host drops the answer anyway.
    pub fn cancelled() -> Self {
        Self::new(ErrorKind::Timeout, "cancelled: no request waits for the answer any more")
    }
}

impl std::fmt::Display for PluginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.message)
    }
}

impl std::error::Error for PluginError {}
