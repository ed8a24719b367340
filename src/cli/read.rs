//! `somatize runs|forwards|curve|facts|nodes|fleet|standing STORE …`: a record read back, as
//! aligned tables or JSON. STORE is a folder or a snapshot .zip; skips go to stderr.

use crate::readback::{self, Answer, Skip};
use crate::store::{DirFs, Field, Store, StoreFs, ZipFs};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Options shared by the read commands (each says which it takes).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store: a folder, a snapshot .zip, or object storage (s3://bucket/prefix, gs://…, az://…).
    store: PathBuf,
    /// The run (needed when the store holds more than one).
    #[arg(long)]
    run: Option<String>,
    /// nodes, fleet: read only the last N forwards' blobs.
    #[arg(long)]
    last: Option<usize>,
    /// curve: the field, `<kind>.<field>` (default loss.value).
    #[arg(long)]
    of: Option<String>,
    /// facts: the forward.
    #[arg(long)]
    forward: Option<u64>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Which read command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    Runs,
    Forwards,
    Curve,
    Facts,
    Nodes,
    Fleet,
    Standing,
}

/// A store from a folder or a snapshot zip, with the path in any message.
pub fn open(path: &Path) -> Result<Store<Box<dyn StoreFs>>, String> {
    let shown = shown(path);
    let say = |e: crate::store::StoreError| match e {
        // An object store's errors name its URL already.
        crate::store::StoreError::Object(_) => e.to_string(),
        e => format!("{shown}: {e}"),
    };
    let fs: Box<dyn StoreFs> = if let Some(url) = object_url(path) {
        Box::new(crate::store::object::ObjectFs::open(url).map_err(|e| e.to_string())?)
    } else if path.is_file() {
        Box::new(ZipFs::open(path).map_err(say)?)
    } else {
        Box::new(DirFs::new(path))
    };
    Store::open(fs).map_err(say)
}

/// The store argument as messages name it (a URL without any credentials written into it).
pub fn shown(path: &Path) -> String {
    match object_url(path) {
        Some(url) => crate::store::object::redacted(url),
        None => path.display().to_string(),
    }
}

/// The store argument as an object storage URL (`s3://…`, `gs://…`, `az://…`), if it is one.
pub fn object_url(path: &Path) -> Option<&str> {
    path.to_str().filter(|s| crate::store::object::is_url(s))
}

/// The run asked for, or the only one the store holds.
pub fn pick_run<F: StoreFs>(store: &Store<F>, run: &Option<String>) -> Result<String, String> {
    if let Some(r) = run {
        return Ok(r.clone());
    }
    let all = store.runs().map_err(|e| e.to_string())?;
    match all.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err("the store holds no runs".into()),
        many => Err(format!("give --run: the store holds {}", many.join(", "))),
    }
}

fn refuse(what: What, args: &Args) -> Result<(), String> {
    let takes = |o: bool, name: &str, ok: &[What]| {
        if o && !ok.contains(&what) {
            Err(format!("{name} does not apply to this command"))
        } else {
            Ok(())
        }
    };
    takes(args.last.is_some(), "--last", &[What::Nodes, What::Fleet])?;
    takes(args.of.is_some(), "--of", &[What::Curve])?;
    takes(args.forward.is_some(), "--forward", &[What::Facts])?;
    takes(
        args.run.is_some(),
        "--run",
        &[
            What::Forwards,
            What::Curve,
            What::Facts,
            What::Nodes,
            What::Fleet,
        ],
    )
}

pub fn run(what: What, args: Args) -> Result<ExitCode, String> {
    refuse(what, &args)?;
    let store = open(&args.store)?;
    let err = |e: readback::ReadbackError| e.to_string();
    let needs_run = || pick_run(&store, &args.run);
    let json = args.json;
    match what {
        What::Runs => show(readback::runs(&store).map_err(err)?, json, |r| {
            runs_table(r)
        }),
        What::Forwards => show(
            readback::forwards(&store, &needs_run()?).map_err(err)?,
            json,
            |r| forwards_table(r),
        ),
        What::Curve => {
            let run = needs_run()?;
            let of = args.of.as_deref().unwrap_or(readback::DEFAULT_FIELD);
            let cost = readback::curve_costs(&store, &run, of).map_err(err)?;
            eprintln!("somatize curve: {of} of run {run:?} by {}", cost.as_str());
            show(readback::curve(&store, &run, of).map_err(err)?, json, |p| {
                let rows = p
                    .iter()
                    .map(|p| vec![p.forward.to_string(), p.value.to_string()])
                    .collect();
                table(&["forward", of], rows)
            })
        }
        What::Facts => {
            let run = needs_run()?;
            let n = args.forward.ok_or("facts needs --forward N")?;
            let facts = readback::facts(&store, &run, n).map_err(err)?;
            if facts.is_none() {
                eprintln!("somatize facts: run {run:?} holds no forward {n}");
            }
            show(Answer::new(facts), json, |f| {
                f.as_deref().map_or(String::new(), facts_table)
            })
        }
        What::Nodes => show(
            readback::nodes(&store, &needs_run()?, args.last).map_err(err)?,
            json,
            |r| nodes_table(r),
        ),
        What::Fleet => show(
            readback::fleet(&store, &needs_run()?, args.last).map_err(err)?,
            json,
            |r| fleet_table(r),
        ),
        What::Standing => show(
            Answer::new(readback::standing(&store).map_err(err)?),
            json,
            standing_table,
        ),
    }
}

/// Print the rows (JSON or a table) on stdout and each skip on stderr.
fn show<T: Serialize>(
    answer: Answer<T>,
    json: bool,
    draw: impl Fn(&T) -> String,
) -> Result<ExitCode, String> {
    for s in &answer.skipped {
        eprintln!("somatize: {s}");
    }
    let mut out = super::output::stdout();
    if json {
        serde_json::to_writer(&mut out, &answer.rows).map_err(|e| e.to_string())?;
        writeln!(out).map_err(|e| e.to_string())?;
    } else {
        out.write_all(draw(&answer.rows).as_bytes())
            .map_err(|e| e.to_string())?;
    }
    out.flush().map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}

/// An aligned text table; columns whose cells are all numbers (or empty) align right.
pub fn table(headers: &[&str], rows: Vec<Vec<String>>) -> String {
    let n = headers.len();
    let mut width: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    let mut numeric = vec![true; n];
    for row in &rows {
        for (i, c) in row.iter().enumerate().take(n) {
            width[i] = width[i].max(c.chars().count());
            numeric[i] &= c.is_empty() || c.parse::<f64>().is_ok();
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut s = String::new();
        for (i, c) in cells.enumerate().take(n) {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = width[i].saturating_sub(c.chars().count());
            if numeric[i] {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            } else {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(&mut headers.iter().copied());
    for row in &rows {
        out.push_str(&line(&mut row.iter().map(String::as_str)));
    }
    out
}

pub fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

fn ms(us: f64) -> String {
    format!("{:.3}", us / 1000.0)
}

/// `YYYY-MM-DD hh:mm:ss.ffffff` UTC from µs since the epoch (the writer's clock).
pub fn utc(us: i64) -> String {
    let secs = us.div_euclid(1_000_000);
    let micros = us.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let rest = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{micros:06}",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

fn runs_table(rows: &[readback::RunRow]) -> String {
    let body = rows
        .iter()
        .map(|r| {
            vec![
                r.run.clone(),
                r.writers.to_string(),
                r.forwards.to_string(),
                r.broke.to_string(),
                opt(r.first_written_us.map(utc)),
                opt(r.last_written_us.map(utc)),
                format!("{:.3}", r.took_us as f64 / 1e6),
                ms(r.mean_took_us),
                opt(r.ended_ok.map(|ok| if ok { "ok" } else { "failed" })),
            ]
        })
        .collect();
    table(
        &[
            "run",
            "writers",
            "forwards",
            "broke",
            "first written (UTC)",
            "last written (UTC)",
            "took (s)",
            "mean (ms)",
            "ended",
        ],
        body,
    )
}

fn forwards_table(rows: &[readback::ForwardRow]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for r in rows {
        for (k, _) in &r.fields {
            if !names.contains(&k.as_ref()) {
                names.push(k);
            }
        }
    }
    let body = rows
        .iter()
        .map(|r| {
            let mut cells = vec![
                r.forward.to_string(),
                r.writer.to_string(),
                utc(r.written_us),
                ms(r.took_us as f64),
                if r.broke {
                    "broke".into()
                } else {
                    String::new()
                },
            ];
            for n in &names {
                cells.push(r.fields.get(n).map_or(String::new(), Field::to_text));
            }
            cells.push(r.error.as_deref().unwrap_or_default().to_string());
            cells
        })
        .collect();
    let mut headers = vec!["forward", "writer", "written (UTC)", "took (ms)", "broke"];
    headers.extend(names.iter().copied());
    headers.push("error");
    table(&headers, body)
}

fn facts_table(facts: &[crate::store::Fact]) -> String {
    let body = facts
        .iter()
        .map(|f| {
            vec![
                f.node.clone(),
                f.kind.clone(),
                f.where_.clone(),
                f.began_us.to_string(),
                f.took_us.to_string(),
                if f.read_back {
                    "read back".into()
                } else {
                    String::new()
                },
                f.error.clone().unwrap_or_default(),
                if f.extra.is_empty() {
                    String::new()
                } else {
                    serde_json::Value::Object(f.extra.clone()).to_string()
                },
            ]
        })
        .collect();
    table(
        &[
            "node", "kind", "where", "began_us", "took_us", "read", "error", "extra",
        ],
        body,
    )
}

fn nodes_table(rows: &[readback::NodeRow]) -> String {
    let body = rows
        .iter()
        .map(|r| {
            vec![
                r.node.clone(),
                r.kind.clone(),
                r.where_.clone(),
                r.ran.to_string(),
                r.read_back.to_string(),
                r.failed.to_string(),
                ms(r.total_us as f64),
                ms(r.mean_us),
            ]
        })
        .collect();
    table(
        &[
            "node",
            "kind",
            "where",
            "ran",
            "read back",
            "failed",
            "total (ms)",
            "mean (ms)",
        ],
        body,
    )
}

fn fleet_table(rows: &[readback::FleetRow]) -> String {
    let body = rows
        .iter()
        .map(|r| {
            vec![
                r.machine.clone(),
                r.nodes.len().to_string(),
                r.ran.to_string(),
                r.read_back.to_string(),
                ms(r.working_us as f64),
                r.calls.to_string(),
                opt(r.round_trip_us.map(|v| ms(v as f64))),
                opt(r.waiting_us.map(|v| ms(v as f64))),
                opt(r.busy.map(|b| format!("{b:.2}"))),
                opt(r.memory),
                opt(r.cores),
                opt(r.up_us.map(|u| format!("{:.1}", u as f64 / 1e6))),
                opt(r.served),
            ]
        })
        .collect();
    table(
        &[
            "machine",
            "nodes",
            "ran",
            "read back",
            "working (ms)",
            "calls",
            "round trip (ms)",
            "waiting (ms)",
            "busy",
            "memory",
            "cores",
            "up (s)",
            "served",
        ],
        body,
    )
}

fn standing_table(rows: &std::collections::BTreeMap<String, readback::StandingRow>) -> String {
    let body = rows
        .values()
        .map(|r| {
            vec![
                r.machine.clone(),
                r.run.clone(),
                r.writer.to_string(),
                utc(r.written_us),
                opt(r.busy.map(|b| format!("{b:.2}"))),
                opt(r.memory),
                opt(r.cores),
                opt(r.up_us.map(|u| format!("{:.1}", u as f64 / 1e6))),
                opt(r.served),
                format!("{:.1}", r.quiet_s),
            ]
        })
        .collect();
    table(
        &[
            "machine",
            "run",
            "writer",
            "written (UTC)",
            "busy",
            "memory",
            "cores",
            "up (s)",
            "served",
            "quiet (s)",
        ],
        body,
    )
}

/// Skips, for callers that print them elsewhere.
pub fn print_skips(skipped: &[Skip]) {
    for s in skipped {
        eprintln!("somatize: {s}");
    }
}
