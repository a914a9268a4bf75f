//! The console in a real browser (Debian's chromium through chromedriver, tests/src/browser.rs).
//!
//! One test binary per group (issue #27): one `mod` per former test file.

mod console;
mod console_lists;
