//! `hide` and `find` come from any client: whatever the text, reading and evaluating it ends
//! without a panic or a stack overflow, and a refusal says why without repeating the text.

use meshlens_graph_scope::{Expr, Kind, json::JsonElement};
use proptest::prelude::*;
use serde_json::Value;

fn table() -> Value {
    serde_json::from_str(include_str!("expressions.json")).expect("the table is JSON")
}

/// Reads `text` and, when it is an expression, evaluates it on every element of its kind.
fn read_and_run(text: &str, elements: &Value) {
    match Expr::parse(text) {
        Ok(expr) => {
            let list = if expr.kind() == Kind::Node { "nodes" } else { "edges" };
            for e in elements[list].as_array().into_iter().flatten() {
                let _ = expr.matches(&JsonElement(&e["data"]));
            }
        }
        Err(e) => {
            assert!(!e.message.is_empty());
            if text.trim().len() >= 12 {
                assert!(!e.message.contains(text.trim()), "{text:?} echoed: {}", e.message);
            }
        }
    }
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    // What a 32 KiB request line can hold, well past any stack.
    let parens = format!("{}dead{}", "(".repeat(30_000), ")".repeat(30_000));
    let e = Expr::parse(&parens).expect_err("too deep");
    assert!(e.message.contains("more than 256 parts"), "{}", e.message);
    let nots = format!("{}dead", "not ".repeat(30_000));
    assert!(Expr::parse(&nots).is_err());
    let ands = vec!["dead"; 20_000].join(" and ");
    assert!(Expr::parse(&ands).is_err());
    // The deepest expression allowed still reads and runs.
    let deepest = format!("{}dead{}", "(".repeat(127), ")".repeat(127));
    let expr = Expr::parse(&deepest).expect("within the bound");
    let t = table();
    let dead: Vec<&str> = t["graph"]["elements"]["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| &n["data"])
        .filter(|d| expr.matches(&JsonElement(d)))
        .filter_map(|d| d["id"].as_str())
        .collect();
    assert_eq!(dead, ["n4"]);
}

/// Characters the grammar gives meaning to, and some it does not.
fn expression_text() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "(", ")", "!", "not ", " and ", " or ", "&&", "||", "=", "!=", ">", ">=", "<", "<=", "\"",
        "'", "name", "ns", "node", "app", "rps", "%error", "tcp", "rt", "protocol", "mtls",
        "hasCB", "dead", "box", "bookinfo", "10", "-1e309", "0x1f", "NaN", " ", "é", "\u{0}",
    ]);
    prop::collection::vec(atoms, 0..40).prop_map(|v| v.concat())
}

fn cases(default: u32) -> ProptestConfig {
    ProptestConfig { cases: default, failure_persistence: None, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(cases(3_000))]

    #[test]
    fn any_text_is_read_without_a_panic(text in "\\PC{0,300}") {
        read_and_run(&text, &table()["graph"]["elements"]);
    }

    #[test]
    fn grammar_shaped_text_is_read_without_a_panic(text in expression_text()) {
        read_and_run(&text, &table()["graph"]["elements"]);
    }

    #[test]
    fn mutated_table_expressions_are_read_without_a_panic(
        pick in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        insert in "\\PC{0,4}",
        cut in 0usize..4,
    ) {
        let t = table();
        let cases = t["cases"].as_array().expect("cases");
        let text = cases[pick.index(cases.len())]["expr"].as_str().unwrap_or_default();
        let chars: Vec<char> = text.chars().collect();
        let i = at.index(chars.len() + 1);
        let end = (i + cut).min(chars.len());
        let mutated: String =
            chars[..i].iter().chain(insert.chars().collect::<Vec<_>>().iter()).chain(&chars[end..]).collect();
        read_and_run(&mutated, &t["graph"]["elements"]);
    }
}

proptest! {
    #![proptest_config(cases(100_000))]

    /// The long run: `cargo test -p meshlens-graph-scope --test properties -- --ignored`.
    #[test]
    #[ignore]
    fn long_run_of_grammar_shaped_text(text in expression_text()) {
        read_and_run(&text, &table()["graph"]["elements"]);
    }
}
