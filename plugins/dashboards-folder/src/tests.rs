use dashboards_spec::is_warning;
use serde_json::json;

use super::*;

const GOOD_TOML: &str = r#"
name = "go"
runtime = "Go"
title = "Our Go"
discoverOn = "go_goroutines"
charts = [{ name = "Goroutines", unit = "", metricName = "go_goroutines", dataType = "raw" }]
"#;

fn split(ts: Vec<DashboardTemplate>) -> (Vec<DashboardTemplate>, Vec<String>) {
    let (w, t): (Vec<_>, Vec<_>) = ts.into_iter().partition(is_warning);
    (t, w.into_iter().map(|w| w.title.to_string()).collect())
}

#[test]
fn reads_the_three_formats_and_skips_other_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.toml"), GOOD_TOML).unwrap();
    std::fs::write(dir.path().join("b.yml"), "name: y\ntitle: Y\ncharts: []\n").unwrap();
    std::fs::write(dir.path().join("c.json"), r#"{"name":"j","title":"J","charts":[]}"#).unwrap();
    std::fs::write(dir.path().join("README.md"), "not a template").unwrap();
    let (t, w) = split(read_folders(&[dir.path().to_path_buf()]));
    assert!(w.is_empty(), "{w:?}");
    let names: Vec<_> = t.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["go", "y", "j"]);
    assert_eq!(t[0].title.as_str(), "Our Go");
}

#[test]
fn a_bad_file_is_skipped_and_reported_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.toml"), GOOD_TOML).unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "name: x\ntitle: X\ncharts: [{name: c, metricName: m, dataType: counter}]\n",
    )
    .unwrap();
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{").unwrap();
    let (t, w) = split(read_folders(&[dir.path().to_path_buf()]));
    assert_eq!(t.len(), 1);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].contains(&bad.display().to_string()) && w[0].contains("counter"), "{}", w[0]);
    assert!(w[1].contains(&broken.display().to_string()) && w[1].contains("JSON"), "{}", w[1]);
}

#[test]
fn first_folder_wins_on_a_duplicate_name() {
    let one = tempfile::tempdir().unwrap();
    let two = tempfile::tempdir().unwrap();
    std::fs::write(one.path().join("go.toml"), GOOD_TOML).unwrap();
    std::fs::write(two.path().join("go.toml"), GOOD_TOML.replace("Our Go", "Their Go")).unwrap();
    let (t, w) = split(read_folders(&[one.path().to_path_buf(), two.path().to_path_buf()]));
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].title.as_str(), "Our Go");
    assert!(w[0].contains("already defined"), "{w:?}");
}

#[test]
fn configure_takes_folders_and_rejects_unreadable_ones() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("go.toml"), GOOD_TOML).unwrap();
    let mut f = Folders::default();
    f.configure(&json!({"folders": [dir.path()]})).unwrap();
    assert_eq!(f.templates(&ClusterData::default()).unwrap().len(), 1);
    let missing = dir.path().join("nope");
    let e = f.configure(&json!({"folders": [missing]})).unwrap_err();
    assert!(e.message.contains("nope"), "{e}");
    assert!(f.configure(&json!({"folders": "x"})).is_err());
    f.configure(&json!({})).unwrap();
    assert!(f.templates(&ClusterData::default()).unwrap().is_empty());
}

#[test]
fn a_folder_removed_after_start_is_a_warning_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    let (t, w) = split(read_folders(std::slice::from_ref(&gone)));
    assert!(t.is_empty());
    assert!(w[0].contains(&gone.display().to_string()));
}
