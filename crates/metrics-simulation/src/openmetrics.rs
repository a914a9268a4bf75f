//! Writing a model's samples as OpenMetrics text, the format
//! `promtool tsdb create-blocks-from openmetrics` and the embedded store read: one
//! `# TYPE` line per family followed by all its series, every series' samples in time order,
//! timestamps in seconds, a final `# EOF`.

use std::io::{self, Write};

use crate::Model;

fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Writes every sample with `from <= t <= to` (Unix seconds; rounded inward to the grid).
pub fn write(model: &Model, from: i64, to: i64, out: &mut dyn Write) -> io::Result<()> {
    let (first, last) = (model.grid_ceil(from), model.grid_floor(to));
    // Families in order of first appearance, each followed by all of its series.
    let mut families: Vec<&str> = Vec::new();
    for s in &model.series {
        if !families.contains(&s.family.as_str()) {
            families.push(&s.family);
        }
    }
    for family in families {
        let mut typed = false;
        for s in model.series.iter().filter(|s| s.family == family) {
            if !typed {
                writeln!(out, "# TYPE {family} {}", s.family_type)?;
                typed = true;
            }
            let labels: Vec<String> =
                s.labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
            let head = format!("{}{{{}}}", s.name, labels.join(","));
            let mut t = first;
            while t <= last {
                // `{}` prints the shortest text that reads back as the same f64.
                writeln!(out, "{head} {} {t}", model.value(s, t))?;
                t += model.step;
            }
        }
    }
    writeln!(out, "# EOF")
}
