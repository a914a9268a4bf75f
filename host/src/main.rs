//! `meshlens [serve] [--config FILE]` starts the service; `meshlens plugins [--config FILE]`
//! lists the plugins it would load.
#![forbid(unsafe_code)]

use std::{io::IsTerminal, path::PathBuf, process::ExitCode, sync::Arc};

use meshlens::{
    config::Config,
    plugins::Registry,
    server,
    state::AppState,
};

// See the workspace manifest for why.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str = "usage: meshlens [serve|plugins] [--config FILE]";

enum Command {
    Serve,
    Plugins,
}

fn parse_args() -> Result<(Command, Option<PathBuf>), String> {
    let mut cmd = None;
    let mut config = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "serve" if cmd.is_none() => cmd = Some(Command::Serve),
            "plugins" if cmd.is_none() => cmd = Some(Command::Plugins),
            "--config" | "-c" => config = Some(PathBuf::from(args.next().ok_or("--config needs a file")?)),
            s if s.starts_with("--config=") => config = Some(PathBuf::from(&s["--config=".len()..])),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    Ok((cmd.unwrap_or(Command::Serve), config))
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let (cmd, config_path) = match parse_args() {
        Ok(v) => v,
        Err(msg) => {
            if !msg.is_empty() {
                eprintln!("meshlens: {msg}");
            }
            eprintln!("{USAGE}");
            return if msg.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(2) };
        }
    };
    match cmd {
        Command::Plugins => list_plugins(config_path),
        Command::Serve => serve(config_path),
    }
}

fn serve(config_path: Option<PathBuf>) -> ExitCode {
    let config = match Config::load(config_path.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("meshlens: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("meshlens: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let state = match AppState::build(config).await {
            Ok(s) => Arc::new(s),
            Err(e) => {
                eprintln!("meshlens: {e}");
                return ExitCode::from(2);
            }
        };
        match server::serve(state).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("meshlens: cannot serve: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

fn list_plugins(config_path: Option<PathBuf>) -> ExitCode {
    // Only `plugins.dirs` matters here, so other settings (e.g. a missing password) do not stop the listing.
    let config = match Config::load_unchecked(config_path.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("meshlens: {e}");
            return ExitCode::from(2);
        }
    };
    let dirs: Vec<PathBuf> = config.plugins.dirs.iter().map(PathBuf::from).collect();
    let reg = match Registry::load(&dirs) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("meshlens: {e}");
            return ExitCode::from(2);
        }
    };
    let mut rows: Vec<[String; 4]> = Vec::new();
    let kinds = [
        ("appender", reg.appenders.iter().map(|c| (&c.name, &c.library)).collect::<Vec<_>>()),
        ("metrics-backend", reg.metrics_backends.iter().map(|c| (&c.name, &c.library)).collect()),
        ("dashboard-provider", reg.dashboard_providers.iter().map(|c| (&c.name, &c.library)).collect()),
    ];
    for (kind, comps) in kinds {
        for (name, lib) in comps {
            rows.push([name.clone(), kind.to_string(), lib.version.clone(), lib.path.display().to_string()]);
        }
    }
    print_table(&["NAME", "KIND", "VERSION", "FILE"], &rows);
    if !reg.refused.is_empty() {
        println!();
        let refused: Vec<[String; 2]> =
            reg.refused.iter().map(|r| [r.path.display().to_string(), r.reason.clone()]).collect();
        print_table(&["REFUSED FILE", "REASON"], &refused);
    }
    ExitCode::SUCCESS
}

fn print_table<const N: usize>(header: &[&str; N], rows: &[[String; N]]) {
    let mut widths: [usize; N] = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: Vec<&str>| {
        let parts: Vec<String> = cells.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        println!("{}", parts.join("  ").trim_end());
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}
