//! The command line as a user meets it: help, version, `config check`, `config defaults`.

use std::process::{Command, Output};

use integration_tests::server::{binary, workspace_root};

fn run(args: &[&str]) -> Output {
    Command::new(binary()).args(args).current_dir(workspace_root()).output().expect("run meshlens")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn config_file(body: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::Builder::new().suffix(".toml").tempfile().expect("temp file");
    std::io::Write::write_all(&mut file, body.as_bytes()).expect("write config");
    file
}

#[test]
fn help_lists_the_subcommands_on_every_level() {
    let out = run(&["--help"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let help = text(&out.stdout);
    for word in ["serve", "plugins", "config", "--config"] {
        assert!(help.contains(word), "`{word}` missing from --help:\n{help}");
    }
    for sub in [
        &["serve", "--help"][..],
        &["plugins", "--help"],
        &["config", "--help"],
        &["config", "check", "--help"],
    ] {
        let out = run(sub);
        assert!(out.status.success(), "{sub:?}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains("Usage: meshlens"), "{sub:?}: {}", text(&out.stdout));
    }
    let config_help = text(&run(&["config", "--help"]).stdout);
    assert!(config_help.contains("check") && config_help.contains("defaults"), "{config_help}");
}

#[test]
fn version_names_the_service_and_the_plugin_api() {
    let out = run(&["--version"]);
    assert!(out.status.success());
    let v = text(&out.stdout);
    assert!(v.starts_with("meshlens "), "{v}");
    assert!(v.contains(&format!("plugin-api {}", plugin_api::API_VERSION)), "{v}");
}

#[test]
fn an_unknown_argument_is_a_usage_error() {
    let out = run(&["--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--no-such-flag"), "{}", text(&out.stderr));
}

#[test]
fn config_check_reports_every_problem_with_its_key_and_fails() {
    let file = config_file(
        "[server]\naddress = \"nowhere\"\n[metrics]\ntimeout = \"0s\"\n[cluster]\nsource = \"snapshot\"\n",
    );
    let out = run(&["config", "check", "--config", file.path().to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    for key in ["`server.address`", "`auth.password`", "`metrics.timeout`", "`cluster.snapshot`"] {
        assert!(err.contains(key), "{key} not reported:\n{err}");
    }
    assert_eq!(err.lines().count(), 4, "one line per problem:\n{err}");
    // Nothing was started: no listening line.
    assert!(!text(&out.stdout).contains("listening"));
}

#[test]
fn config_check_names_an_unknown_key_and_accepts_the_demo() {
    let file = config_file("[server]\nprot = 1\n");
    let out = run(&["config", "check", "-c", file.path().to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("`server.prot`"), "{}", text(&out.stderr));

    let out = run(&["config", "check", "--config", "config/demo.toml"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn config_defaults_prints_the_documented_file_and_it_checks_clean_once_a_password_is_set() {
    let out = run(&["config", "defaults"]);
    assert!(out.status.success());
    let printed = text(&out.stdout);
    let shipped = std::fs::read_to_string(workspace_root().join("config/meshlens.toml"))
        .expect("config/meshlens.toml");
    assert_eq!(printed, shipped);
    // The defaults alone lack only the one secret that has no default.
    let file = config_file(&printed);
    let out = run(&["config", "check", "--config", file.path().to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("`auth.password`") && err.lines().count() == 1, "{err}");
}
