//! Freeing big values on a background thread, not on the thread that is done with them.
//!
//! A graph's traffic answer of 120,000 series is millions of small allocations (every label
//! a string made by the backend plugin). Freeing it inline kept a CPU-pool thread busy
//! 50–170 ms (optimised build; 350–420 ms unoptimised) after its request was cancelled or
//! answered: longer than stopping the build itself. One "dropper" thread frees such values
//! instead. Its queue is bounded: when it is behind, the caller frees inline, so memory
//! waiting to be freed stays bounded and the caller is slowed as before, never blocked.

use std::{
    ops::{Deref, DerefMut},
    panic::{AssertUnwindSafe, catch_unwind},
    sync::{OnceLock, mpsc},
};

/// Something to free, of any type.
type Parcel = Box<dyn Send>;

/// Values waiting for the dropper at most. A graph request hands over a few; past this
/// many the dropper is behind, and callers free their own again.
const QUEUE: usize = 64;

/// A thread that frees what it is given, in order.
pub struct Dropper {
    /// `None` when the thread could not be started: everything is freed inline.
    tx: Option<mpsc::SyncSender<Parcel>>,
}

impl Dropper {
    /// Starts the thread `name`, taking at most `queue` values ahead of what it frees.
    pub fn start(name: &str, queue: usize) -> Dropper {
        let (tx, rx) = mpsc::sync_channel::<Parcel>(queue);
        let thread = std::thread::Builder::new().name(name.to_string());
        let spawned = thread.spawn(move || {
            for parcel in rx {
                // A panicking destructor must not end the thread that frees everyone's values.
                let freed = catch_unwind(AssertUnwindSafe(|| drop(parcel)));
                if freed.is_err() {
                    tracing::warn!("a value panicked while being freed");
                }
            }
        });
        match spawned {
            Ok(_) => Dropper { tx: Some(tx) },
            Err(e) => {
                tracing::warn!(error = %e, "no dropper thread: values are freed inline");
                Dropper { tx: None }
            }
        }
    }

    /// Frees `value` on the dropper thread, or right here when its queue is full.
    pub fn drop_later<T: Send + 'static>(&self, value: T) {
        if !std::mem::needs_drop::<T>() {
            return;
        }
        if let Some(tx) = &self.tx {
            // Full (or the thread is gone): the error holds the value and frees it here.
            let _ = tx.try_send(Box::new(value));
        }
    }
}

/// Frees `value` on the service's dropper thread (started on first use), or right here
/// when that thread is behind.
pub fn drop_later<T: Send + 'static>(value: T) {
    static DROPPER: OnceLock<Dropper> = OnceLock::new();
    DROPPER.get_or_init(|| Dropper::start("meshlens-dropper", QUEUE)).drop_later(value);
}

/// Holds a value and hands it to [`drop_later`] when dropped, on every way out of a scope
/// (`?`, early return, unwinding).
pub struct DropLater<T: Send + 'static>(Option<T>);

impl<T: Send + 'static> DropLater<T> {
    pub fn new(value: T) -> DropLater<T> {
        DropLater(Some(value))
    }
}

impl<T: Send + 'static> Deref for DropLater<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // Taken only by `drop`, after which nothing can reach it.
        self.0.as_ref().expect("a DropLater holds its value until dropped")
    }
}

impl<T: Send + 'static> DerefMut for DropLater<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0.as_mut().expect("a DropLater holds its value until dropped")
    }
}

impl<T: Send + 'static> Drop for DropLater<T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            drop_later(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{sync::mpsc::Sender, time::Duration};

    use super::*;

    /// Says which thread freed it, after waiting for `hold` (when given) to end.
    struct Probe {
        freed_on: Sender<Option<String>>,
        hold: Option<mpsc::Receiver<()>>,
    }

    impl Drop for Probe {
        fn drop(&mut self) {
            if let Some(hold) = &self.hold {
                let _ = self.freed_on.send(Some("holding".into()));
                let _ = hold.recv();
            }
            let _ = self.freed_on.send(std::thread::current().name().map(str::to_string));
        }
    }

    fn freed_on(rx: &mpsc::Receiver<Option<String>>) -> Option<String> {
        rx.recv_timeout(Duration::from_secs(10)).expect("the value was freed")
    }

    #[test]
    fn values_are_freed_on_the_dropper_thread() {
        let (tx, rx) = mpsc::channel();
        drop_later(Probe { freed_on: tx.clone(), hold: None });
        assert_eq!(freed_on(&rx).as_deref(), Some("meshlens-dropper"));
        // The guard frees its value there too, after lending it out.
        let mut guarded = DropLater::new(vec![Probe { freed_on: tx.clone(), hold: None }]);
        guarded.push(Probe { freed_on: tx, hold: None });
        assert_eq!(guarded.len(), 2);
        drop(guarded);
        assert_eq!(freed_on(&rx).as_deref(), Some("meshlens-dropper"));
        assert_eq!(freed_on(&rx).as_deref(), Some("meshlens-dropper"));
    }

    #[test]
    fn a_full_queue_frees_inline_and_a_panicking_value_does_not_stop_the_thread() {
        let d = Dropper::start("test-dropper", 1);
        let (tx, rx) = mpsc::channel();
        let (release, hold) = mpsc::channel();
        // The thread is busy with the first value; the second fills the queue.
        d.drop_later(Probe { freed_on: tx.clone(), hold: Some(hold) });
        assert_eq!(freed_on(&rx).as_deref(), Some("holding"));
        d.drop_later(Probe { freed_on: tx.clone(), hold: None });
        // The third is freed by the caller, at once.
        let here = std::thread::current().name().map(str::to_string);
        d.drop_later(Probe { freed_on: tx.clone(), hold: None });
        assert_eq!(freed_on(&rx), here);
        release.send(()).expect("the first value is waiting");
        assert_eq!(freed_on(&rx).as_deref(), Some("test-dropper"));
        assert_eq!(freed_on(&rx).as_deref(), Some("test-dropper"));

        struct Panics(Sender<Option<String>>);
        impl Drop for Panics {
            fn drop(&mut self) {
                let _ = self.0.send(Some("panicking".into()));
                panic!("boom");
            }
        }
        d.drop_later(Panics(tx.clone()));
        // Taken off the queue, so the next value finds room.
        assert_eq!(freed_on(&rx).as_deref(), Some("panicking"));
        d.drop_later(Probe { freed_on: tx, hold: None });
        assert_eq!(freed_on(&rx).as_deref(), Some("test-dropper"));
    }
}
