//! The console in a real browser (Debian's chromium through chromedriver, tests/src/browser.rs).
//!
//! One test binary per group (README, "The two commands"): one `mod` per test file.

mod common;
mod console;
mod console_clusters;
mod console_lists;
mod console_replay;
