//! `somatize stats FILE [--json]`: every tensor's key, shape, dtype and statistics, as a table or JSON.

use crate::math::stats::Stats;
use crate::tensor::{Summaries, TensorFile};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A .npy, .npz, PyTorch .pt/.pth or .safetensors file.
    file: PathBuf,
    /// Print `{key: {shape, dtype, count, ...}}` as JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    let mut file = TensorFile::open_path(&args.file).map_err(|e| e.to_string())?;
    let summaries = file.summarize().map_err(|e| e.to_string())?;
    if args.json {
        let text = serde_json::to_string_pretty(&summaries).map_err(|e| e.to_string())?;
        outln!("{text}");
    } else {
        out!("{}", table(&summaries));
    }
    Ok(ExitCode::SUCCESS)
}

/// A number in at most ~10 characters: fixed for ordinary magnitudes, scientific otherwise.
fn num(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(0.0) => "0".into(),
        Some(x) if (1e-4..1e6).contains(&x.abs()) => {
            let s = format!("{x:.6}");
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        }
        Some(x) => format!("{x:.4e}"),
    }
}

/// A shape as numpy prints it: `()`, `(4,)`, `(2, 3)`.
fn shape(dims: &[usize]) -> String {
    match dims {
        [d] => format!("({d},)"),
        _ => format!(
            "({})",
            dims.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The rows of the table, header first.
fn rows(s: &Summaries) -> Vec<Vec<String>> {
    let header = ["key", "shape", "dtype"]
        .into_iter()
        .chain(Stats::COUNTS)
        .chain(Stats::FLOATS);
    let mut out = vec![header.map(str::to_string).collect()];
    for (key, t) in &s.0 {
        let st = &t.stats;
        let shape = shape(&t.shape);
        let mut row = vec![key.clone(), shape, t.dtype.clone()];
        row.extend(st.counts().map(|n| n.to_string()));
        row.extend(st.floats().map(num));
        out.push(row);
    }
    out
}

/// An aligned table: text columns left-aligned, numbers right-aligned.
fn table(s: &Summaries) -> String {
    let rows = rows(s);
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, &w))| {
                if c < 3 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short() {
        let cases = [
            (None, "-"),
            (Some(0.0), "0"),
            (Some(1.5), "1.5"),
            (Some(-0.123456789), "-0.123457"),
            (Some(1e-9), "1.0000e-9"),
            (Some(f64::INFINITY), "inf"),
            (Some(12345678.0), "1.2346e7"),
        ];
        for (v, want) in cases {
            assert_eq!(num(v), want, "{v:?}");
        }
    }
}
