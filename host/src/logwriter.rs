//! Where log lines go: `tracing-appender`'s lossy non-blocking writer, a bounded queue with
//! one thread writing to stderr.
//!
//! Every request logs a line, from the async workers. Written directly, a log reader that
//! falls behind (a container runtime's pipe, a test harness) fills the pipe and then blocks
//! those workers in `write(2)`: every request waits, cheap ones included. Through the queue
//! a worker never blocks; when the queue is full the line is dropped and counted, and a
//! reporter thread says how many were lost once the reader takes lines again.

use std::{
    io::{self, Write},
    sync::{Mutex, mpsc},
    time::Duration,
};

use tracing_appender::non_blocking::{ErrorCounter, NonBlocking, NonBlockingBuilder, WorkerGuard};

/// Lines the queue holds (a few MiB at most) before new ones are dropped.
const QUEUE_LINES: usize = 8192;

/// How often the reporter looks at the count of dropped lines.
const REPORT_EVERY: Duration = Duration::from_secs(1);

/// Kept until exit: dropping it writes what is queued and ends the writer thread.
static GUARD: Mutex<Option<WorkerGuard>> = Mutex::new(None);

/// Starts the writer thread (64 KiB of buffer, so stderr gets one write per burst of lines,
/// not one per line) and the reporter; the writer is the log's `MakeWriter`.
pub fn start() -> io::Result<NonBlocking> {
    let (writer, guard) = NonBlockingBuilder::default()
        .buffered_lines_limit(QUEUE_LINES)
        .lossy(true)
        .thread_name("meshlens-log")
        .finish(io::BufWriter::with_capacity(64 * 1024, io::stderr()));
    let counter = writer.error_counter();
    std::thread::Builder::new()
        .name("meshlens-log-losses".into())
        .spawn(move || report_losses(&counter, io::stderr(), REPORT_EVERY))?;
    *GUARD.lock().unwrap_or_else(|e| e.into_inner()) = Some(guard);
    Ok(writer)
}

/// Says every `period` how many lines were dropped since it last said so. It writes to
/// stderr itself: through the full queue its report would be dropped too. Blocking on a
/// stalled reader is harmless here, on a thread of its own.
fn report_losses(counter: &ErrorCounter, mut out: impl Write, period: Duration) {
    let mut reported = 0;
    loop {
        std::thread::sleep(period);
        let dropped = counter.dropped_lines();
        if dropped > reported {
            let _ = writeln!(
                out,
                "meshlens: {} log lines dropped: the log's reader fell behind",
                dropped - reported
            );
            let _ = out.flush();
            reported = dropped;
        }
    }
}

/// Waits (at most `timeout`) until every line logged so far is written: before the
/// process exits, so that its last lines are not lost. The writer thread ends with it.
pub fn flush(timeout: Duration) {
    let Some(guard) = GUARD.lock().unwrap_or_else(|e| e.into_inner()).take() else { return };
    // Dropping the guard waits for the writer for up to a second; a second signal's exit
    // waits no longer than `timeout`.
    let (done_tx, done_rx) = mpsc::sync_channel(1);
    let flushing = std::thread::Builder::new().name("meshlens-log-flush".into()).spawn(move || {
        drop(guard);
        let _ = done_tx.send(());
    });
    if flushing.is_ok() {
        let _ = done_rx.recv_timeout(timeout);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, atomic::AtomicBool};

    use tracing_subscriber::fmt::MakeWriter;

    use super::*;

    /// A reader that takes nothing until told to: writes wait for it.
    struct Stalled(Arc<AtomicBool>, Arc<Mutex<Vec<u8>>>);

    impl Write for Stalled {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            while !self.0.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
            }
            self.1.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stalled_reader_never_blocks_the_logger_and_losses_are_reported() {
        let open = Arc::new(AtomicBool::new(false));
        let written = Arc::new(Mutex::new(Vec::new()));
        let (writer, guard) = NonBlockingBuilder::default()
            .buffered_lines_limit(4)
            .lossy(true)
            .finish(Stalled(open.clone(), written.clone()));
        // Nobody reads: a few lines are queued, the rest dropped, and no call blocks.
        for i in 0..100 {
            // One write per line, as the log's formatter makes it.
            writer.make_writer().write_all(format!("line {i}\n").as_bytes()).unwrap();
        }
        let counter = writer.error_counter();
        assert!(counter.dropped_lines() >= 90, "dropped {}", counter.dropped_lines());
        // The report counts them, once the reader takes lines again.
        let report = Arc::new(Mutex::new(Vec::new()));
        let sink = Stalled(open.clone(), report.clone());
        let reporter_counter = counter.clone();
        std::thread::spawn(move || {
            report_losses(&reporter_counter, sink, Duration::from_millis(1))
        });
        open.store(true, std::sync::atomic::Ordering::Relaxed);
        drop(guard);
        let text = String::from_utf8(written.lock().unwrap().clone()).unwrap();
        assert!(text.starts_with("line 0\n"), "{text}");
        assert!(!text.contains("line 99\n"), "{text}");
        let mut said = String::new();
        for _ in 0..200 {
            said = String::from_utf8(report.lock().unwrap().clone()).unwrap();
            if !said.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let n = counter.dropped_lines();
        assert!(said.starts_with(&format!("meshlens: {n} log lines dropped")), "{said}");
    }
}
