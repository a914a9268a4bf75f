//! The shared expression table (`expressions.json`, also read by the console's browser test).

use meshlens_graph_scope::{Expr, Kind, json::JsonElement};
use serde_json::Value;

#[test]
fn every_expression_of_the_table_selects_its_hand_computed_ids() {
    let table: Value = serde_json::from_str(include_str!("expressions.json")).unwrap();
    let elements = &table["graph"]["elements"];
    let cases = table["cases"].as_array().unwrap();
    assert!(cases.len() >= 20, "the issue asks for at least 20 expressions");
    for case in cases {
        let text = case["expr"].as_str().unwrap();
        let parsed = Expr::parse(text);
        if let Some(kind) = case["error"].as_str() {
            let e = parsed.expect_err(text);
            let unknown = e.message.contains("unknown attribute");
            let mixed = e.message.contains("not both");
            let got = if unknown {
                "unknown"
            } else if mixed {
                "mixed"
            } else {
                "syntax"
            };
            assert_eq!(got, kind, "{text}: {}", e.message);
            continue;
        }
        let expr = parsed.unwrap_or_else(|e| panic!("{text}: {e}"));
        let kind = case["kind"].as_str().unwrap();
        assert_eq!(expr.kind().as_str(), kind, "{text}");
        let list = if expr.kind() == Kind::Node { "nodes" } else { "edges" };
        let mut got: Vec<&str> = elements[list]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| &e["data"])
            .filter(|d| expr.matches(&JsonElement(d)))
            .map(|d| d["id"].as_str().unwrap())
            .collect();
        let mut want: Vec<&str> =
            case["ids"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "{text}");
    }
}
