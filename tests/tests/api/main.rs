//! API behaviour that needs no outside server: the service in process
//! (`integration_tests::inprocess`; the binary only where a test measures the process's
//! memory or runs its CLI) over snapshot manifests, the simulator or files; the Swagger
//! document; parsers of untrusted input.
//!
//! One test binary per group (README, "The two commands"): one `mod` per test file.

mod api_document;
mod backend_cancel;
mod cluster_snapshot;
mod dashboards_plugins;
mod login_hardening;
mod no_echo;
mod parser_properties;
