//! Where log lines go: a bounded queue and one thread that writes them to stderr.
//!
//! Every request logs a line, from the async workers. Written directly, a log reader that
//! falls behind (a container runtime's pipe, a test harness) fills the pipe and then blocks
//! those workers in `write(2)`: every request waits, cheap ones included. Through the queue
//! a worker never blocks; when the queue is full the line is dropped, counted, and the
//! writer reports how many were lost once it catches up.

use std::{
    io::{self, Write},
    sync::{
        Mutex, OnceLock,
        atomic::{AtomicU64, Ordering},
        mpsc::{Receiver, SyncSender, TrySendError, sync_channel},
    },
    time::Duration,
};

/// Lines the queue holds (a few MiB at most) before new ones are dropped.
const QUEUE_LINES: usize = 8192;

enum Message {
    Line(Vec<u8>),
    /// Everything queued before this is written; then the sender is told.
    Flush(SyncSender<()>),
}

/// The writer thread's queue and the count of lines dropped since the last report.
pub struct LogQueue {
    tx: SyncSender<Message>,
    dropped: &'static AtomicU64,
}

static DROPPED: AtomicU64 = AtomicU64::new(0);
static QUEUE: OnceLock<Mutex<SyncSender<Message>>> = OnceLock::new();

impl LogQueue {
    /// Starts the writer thread (once per process; later calls share it).
    pub fn start() -> io::Result<LogQueue> {
        if let Some(tx) = QUEUE.get() {
            let tx = tx.lock().unwrap_or_else(|e| e.into_inner()).clone();
            return Ok(LogQueue { tx, dropped: &DROPPED });
        }
        let (tx, rx) = sync_channel(QUEUE_LINES);
        std::thread::Builder::new()
            .name("meshlens-log".into())
            .spawn(move || write_lines(rx, io::stderr()))?;
        let _ = QUEUE.set(Mutex::new(tx.clone()));
        Ok(LogQueue { tx, dropped: &DROPPED })
    }
}

/// Waits (at most `timeout`) until every line logged so far is written: before the
/// process exits, so that its last lines are not lost.
pub fn flush(timeout: Duration) {
    let Some(tx) = QUEUE.get() else { return };
    let tx = tx.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let (done_tx, done_rx) = sync_channel(1);
    if tx.send(Message::Flush(done_tx)).is_ok() {
        let _ = done_rx.recv_timeout(timeout);
    }
}

/// How long the writer pauses between batches while lines keep coming.
const BATCH_PAUSE: Duration = Duration::from_millis(2);

/// Writes queued lines until every sender is gone. Idle, it blocks on the queue (the next
/// line wakes it, once); busy, it takes what has come every [`BATCH_PAUSE`] and writes it
/// in one go, so that loggers do not wake it per line and stderr gets one write per batch.
fn write_lines(rx: Receiver<Message>, out: impl Write) {
    let mut out = io::BufWriter::with_capacity(64 * 1024, out);
    while let Ok(first) = rx.recv() {
        let mut message = Some(first);
        loop {
            while let Some(m) = message.take().or_else(|| rx.try_recv().ok()) {
                match m {
                    Message::Line(line) => {
                        let _ = out.write_all(&line);
                    }
                    Message::Flush(done) => {
                        let _ = out.flush();
                        let _ = done.send(());
                    }
                }
            }
            let lost = DROPPED.swap(0, Ordering::Relaxed);
            if lost > 0 {
                let _ = writeln!(
                    out,
                    "meshlens: {lost} log lines dropped: the log's reader fell behind"
                );
            }
            let _ = out.flush();
            std::thread::sleep(BATCH_PAUSE);
            match rx.try_recv() {
                Ok(m) => message = Some(m),
                // Quiet for a pause: wait for the next line.
                Err(_) => break,
            }
        }
    }
    let _ = out.flush();
}

/// One event's text, queued whole when the formatter is done with it.
pub struct LineWriter<'a> {
    queue: &'a LogQueue,
    buf: Vec<u8>,
}

impl Write for LineWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for LineWriter<'_> {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let line = std::mem::take(&mut self.buf);
        match self.queue.tx.try_send(Message::Line(line)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.queue.dropped.fetch_add(1, Ordering::Relaxed);
            }
            // The writer thread is gone (the process is ending): nowhere to write.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogQueue {
    type Writer = LineWriter<'a>;
    fn make_writer(&'a self) -> Self::Writer {
        LineWriter { queue: self, buf: Vec::with_capacity(256) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that takes nothing for a while: loggers never wait for it.
    #[test]
    fn a_stalled_reader_never_blocks_the_logger_and_losses_are_reported() {
        let (tx, rx) = sync_channel(4);
        let queue = LogQueue { tx, dropped: &DROPPED };
        DROPPED.store(0, Ordering::Relaxed);
        // Nobody reads yet: four lines fit, the rest are dropped, and no call blocks.
        for i in 0..10 {
            let mut w = tracing_subscriber::fmt::MakeWriter::make_writer(&queue);
            writeln!(w, "line {i}").unwrap();
        }
        assert_eq!(DROPPED.load(Ordering::Relaxed), 6);
        drop(queue);
        let mut out = Vec::new();
        write_lines(rx, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("line 0\n"), "{text}");
        assert!(text.contains("line 3\n") && !text.contains("line 4\n"), "{text}");
        assert!(text.contains("6 log lines dropped"), "{text}");
    }
}
