//! The host's "nobody waits for this any more" flag, shared with a plugin call.
//!
//! The host sets it when every request waiting for a call's answer is gone (the client went
//! away, or the request timed out); the plugin checks it where it checks its deadline and
//! stops early. Added in plugin-api 0.1.2.

use std::sync::atomic::{AtomicBool, Ordering};

use abi_stable::{StableAbi, std_types::RArc};

/// A cancellation flag. Clones share one flag; `RArc` frees it through the side that
/// allocated it, so either side may drop the last clone.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default)]
pub struct Cancel {
    flag: RArc<AtomicBool>,
}

impl Cancel {
    /// A flag that is not set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the flag (the host's side).
    pub fn cancel(&self) {
        // Nothing is published with the flag: the plugin only has to see it soon.
        self.flag.store(true, Ordering::Relaxed);
    }

    /// Whether the host gave up on the call.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::Cancel;

    #[test]
    fn clones_share_the_flag() {
        let a = Cancel::new();
        let b = a.clone();
        assert!(!b.is_cancelled());
        a.cancel();
        assert!(b.is_cancelled());
        assert!(!Cancel::new().is_cancelled());
    }
}
