//! Embedded store vs real Prometheus (filled in below).
fn main() {}
