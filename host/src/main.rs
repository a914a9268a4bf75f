//! The `meshlens` command: `serve` (the default), `plugins`, `config check`, `config defaults`,
//! `simulate` (a simulated mesh's traffic written as an OpenMetrics file).
#![forbid(unsafe_code)]

mod simulate;

use std::{path::PathBuf, process::ExitCode, sync::Arc};

use clap::{Parser, Subcommand};
use meshlens::{
    config::{Config, ConfigError},
    plugins::Registry,
    server,
    state::AppState,
    telemetry,
};

// See the workspace manifest for why.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The documented defaults; a unit test in `config.rs` keeps them equal to `Config::default()`.
const DEFAULTS: &str = include_str!("../../config/meshlens.toml");

/// `--version` also names the plugin-api version plugins must be built against.
fn version() -> String {
    format!("{} (plugin-api {})", env!("CARGO_PKG_VERSION"), plugin_api::API_VERSION)
}

/// Observability service for an Istio-style service mesh.
#[derive(Parser)]
#[command(name = "meshlens", version = version(), about, long_about = None)]
struct Cli {
    /// Configuration file (TOML); `MESHLENS_<SECTION>__<KEY>` variables override it.
    #[arg(short, long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Start the service (the default).
    Serve,
    /// List the plugins the configuration would load.
    Plugins,
    /// Check or print configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Write a simulated mesh's samples (the `simulator` backend's model) as OpenMetrics text.
    Simulate(simulate::Args),
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Validate a configuration without starting anything; report every problem with its key.
    Check,
    /// Print the documented default configuration (every key, with a comment).
    Defaults,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(cli.config),
        Command::Plugins => list_plugins(cli.config),
        Command::Config(ConfigCommand::Check) => check_config(cli.config),
        Command::Simulate(args) => simulate::run(&args),
        Command::Config(ConfigCommand::Defaults) => {
            print!("{DEFAULTS}");
            ExitCode::SUCCESS
        }
    };
    // The log's last lines are still queued for its writer thread.
    meshlens::logwriter::flush(server::RUNTIME_SHUTDOWN);
    code
}

fn check_config(config_path: Option<PathBuf>) -> ExitCode {
    let problems = match Config::load_unchecked(config_path.as_deref()) {
        Ok(c) => c.problems(),
        Err(e) => vec![e],
    };
    if problems.is_empty() {
        println!("configuration is valid");
        return ExitCode::SUCCESS;
    }
    print_problems(&problems);
    ExitCode::from(2)
}

/// One line per problem, each naming its key.
fn print_problems(problems: &[ConfigError]) {
    for p in problems.iter().flat_map(|p| match p {
        ConfigError::Several(all) => all.iter().collect(),
        one => vec![one],
    }) {
        eprintln!("meshlens: {p}");
    }
}

fn serve(config_path: Option<PathBuf>) -> ExitCode {
    let config = match Config::load(config_path.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            print_problems(&[e]);
            return ExitCode::from(2);
        }
    };
    telemetry::init_logging(&config.log);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("meshlens: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(async move {
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
    });
    // Dropping the runtime would wait for every blocking task, such as a backend call
    // stuck on a hung store; the drain has already bounded what we wait for.
    runtime.shutdown_timeout(server::RUNTIME_SHUTDOWN);
    code
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
    telemetry::init_logging(&config.log);
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
        (
            "dashboard-provider",
            reg.dashboard_providers.iter().map(|c| (&c.name, &c.library)).collect(),
        ),
    ];
    for (kind, comps) in kinds {
        for (name, lib) in comps {
            rows.push([
                name.clone(),
                kind.to_string(),
                lib.version.clone(),
                lib.path.display().to_string(),
            ]);
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
        let parts: Vec<String> =
            cells.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        println!("{}", parts.join("  ").trim_end());
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}
