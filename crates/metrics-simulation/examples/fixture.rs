//! Writes a test fixture (see `metrics_simulation::fixture`) as files:
//!
//! ```text
//! cargo run -p metrics-simulation --example fixture -- --out /tmp/m.om [--expected /tmp/m.json] \
//!     [--topology demo|synthetic] [--namespaces N] [--workloads N] [--minutes M] [--end now|T] \
//!     [--step S] [--duration-unit ms|s]
//! ```
//!
//! `--out -` (or no `--out`) writes the OpenMetrics text to standard output.

use std::{
    io::{BufWriter, Write},
    process::ExitCode,
    time::{SystemTime, UNIX_EPOCH},
};

use metrics_simulation::fixture::{self, Options};

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut out, mut expected, mut rest) = (None, None, Vec::new());
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => out = it.next().cloned(),
            "--expected" => expected = it.next().cloned(),
            _ => rest.push(a.as_str()),
        }
    }
    let options = Options::parse(&rest)?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    let doc = match out.as_deref() {
        None | Some("-") => {
            let mut w = BufWriter::new(std::io::stdout().lock());
            fixture::write(&options, now, &mut w).and_then(|d| w.flush().map(|()| d))
        }
        Some(path) => std::fs::File::create(path).and_then(|f| {
            let mut w = BufWriter::with_capacity(1 << 20, f);
            fixture::write(&options, now, &mut w).and_then(|d| w.flush().map(|()| d))
        }),
    }
    .map_err(|e| e.to_string())?;
    if let Some(path) = expected {
        let mut f = std::fs::File::create(&path).map_err(|e| format!("{path}: {e}"))?;
        fixture::write_expected(&doc, &mut f).map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fixture: {e}");
            ExitCode::from(2)
        }
    }
}
