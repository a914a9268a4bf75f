//! The service layer between HTTP and the domain: what an operation does, given its parsed
//! request, the caller's access and the request's context. Handlers in [`crate::api`]
//! parse, call one of these, and write the answer; benchmarks and tests call them directly.

pub mod graph;
pub mod graph_cache;
pub mod graph_inputs;
pub mod graph_rights;
