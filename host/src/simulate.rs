//! `meshlens simulate --topology FILE --out FILE [--minutes N] [--end T] [--start T]`: writes
//! the samples of a simulated mesh (the model the `simulator` backend serves live) as an
//! OpenMetrics file, for `promtool tsdb create-blocks-from openmetrics` or the
//! `openmetrics_file` backend.

use std::{
    io::{BufWriter, Write},
    path::PathBuf,
    process::ExitCode,
};

use metrics_simulation::{Model, Topology, openmetrics};

#[derive(clap::Args)]
pub struct Args {
    /// The topology file (e.g. config/demo/topology.toml).
    #[arg(long, value_name = "FILE")]
    topology: PathBuf,
    /// Output file; `-` writes to standard output.
    #[arg(long, value_name = "FILE")]
    out: String,
    /// Minutes of samples, ending at --end.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(i64).range(1..))]
    minutes: i64,
    /// The last sample's time, Unix seconds (default: now).
    #[arg(long, value_name = "UNIX_SECONDS", value_parser = clap::value_parser!(i64).range(0..))]
    end: Option<i64>,
    /// The scenario cycle's phase zero, Unix seconds (default: --end, as the live backend's
    /// own start is its first "now").
    #[arg(long, value_name = "UNIX_SECONDS", value_parser = clap::value_parser!(i64).range(0..))]
    start: Option<i64>,
}

fn write(args: &Args) -> Result<(), String> {
    let topology = Topology::load(&args.topology).map_err(|e| e.to_string())?;
    let now = meshlens_params::now();
    let end = args.end.unwrap_or(now);
    let model = Model::new(&topology, args.start.unwrap_or(end));
    let from = end - args.minutes * 60;
    if args.out == "-" {
        let mut out = BufWriter::new(std::io::stdout().lock());
        return openmetrics::write(&model, from, end, &mut out)
            .and_then(|()| out.flush())
            .map_err(|e| e.to_string());
    }
    // Written beside the target and renamed: a reader never sees half a file.
    let tmp = format!("{}.partial", args.out);
    let result = std::fs::File::create(&tmp).and_then(|f| {
        let mut out = BufWriter::with_capacity(1 << 20, f);
        openmetrics::write(&model, from, end, &mut out)?;
        out.flush()?;
        std::fs::rename(&tmp, &args.out)
    });
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("cannot write {}: {e}", args.out));
    }
    Ok(())
}

/// Runs the subcommand.
pub fn run(args: &Args) -> ExitCode {
    match write(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("meshlens simulate: {e}");
            ExitCode::from(2)
        }
    }
}
