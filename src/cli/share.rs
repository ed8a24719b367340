//! `somatize share STORE [--run R]… [--runs GLOB] [--expires 1d] [--public-url URL] [-o FILE]
//! [--put]`: a store on object storage as links that the page and the npm package open with
//! plain HTTP Range requests, without credentials (src/store/share.rs; docs/store-format.md).

use crate::store::object::{self, ObjectFs};
use crate::store::share::{self, Links};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store on object storage: s3://bucket/prefix, gs://…, az://….
    store: String,
    /// Only this run (repeatable); every run when neither --run nor --runs is given.
    #[arg(long)]
    run: Vec<String>,
    /// Only runs whose names match this glob (`*` any characters, `?` one).
    #[arg(long)]
    runs: Option<String>,
    /// How long the presigned links work: 90s, 30m, 12h, 7d (from 1 s to 7 days).
    #[arg(long, default_value = "1d", value_parser = humantime::parse_duration)]
    expires: Duration,
    /// Link the objects under this public-read URL of the store's root instead of presigning
    /// them (e.g. https://BUCKET.s3.amazonaws.com/PREFIX); such links do not expire.
    #[arg(long, value_name = "URL")]
    public_url: Option<url::Url>,
    /// Write the share document to this file (default: standard output).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Also put the document into the store (shares/<time>-<token>.json) and print one link
    /// to it: the page opens it as `?store=<link>`, the npm package as `open(link)`.
    #[arg(long)]
    put: bool,
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    if !object::is_url(&args.store) {
        return Err(format!(
            "{}: share takes a store on object storage (s3://, gs://, az://); a folder is \
             shared by serving it (`somatize serve`) or as a snapshot (`somatize export`)",
            args.store
        ));
    }
    let shown = object::redacted(&args.store);
    let fs = ObjectFs::open(&args.store).map_err(|e| e.to_string())?;
    let keep = |run: &str| {
        let named = args.run.is_empty() || args.run.iter().any(|r| r == run);
        let globbed = args
            .runs
            .as_deref()
            .is_none_or(|g| crate::health::compare::glob_match(g, run));
        named && globbed
    };
    let links = match &args.public_url {
        Some(u) => Links::Public(u.clone()),
        None => Links::Presigned(args.expires),
    };
    let doc = share::share(&fs, &keep, &links).map_err(|e| e.to_string())?;
    let runs: std::collections::BTreeSet<&str> = doc
        .files
        .keys()
        .filter_map(|p| p.strip_prefix("runs/")?.split('/').next())
        .collect();
    for r in &args.run {
        if !runs.contains(r.as_str()) {
            return Err(format!("{shown}: no run {r:?} to share"));
        }
    }
    let mut json = serde_json::to_vec(&doc).map_err(|e| e.to_string())?;
    json.push(b'\n');
    match &args.output {
        Some(path) => {
            std::fs::write(path, &json).map_err(|e| format!("{}: {e}", path.display()))?
        }
        None if !args.put => {
            use std::io::Write;
            let mut out = super::output::stdout();
            out.write_all(&json)
                .and_then(|()| out.flush())
                .map_err(|e| format!("stdout: {e}"))?
        }
        None => {}
    }
    let until = match doc.expires_s {
        Some(s) => format!(
            "links work until {} UTC",
            super::read::utc(i64::try_from(s).unwrap_or(i64::MAX / 1_000_000) * 1_000_000)
                .trim_end_matches(".000000")
        ),
        None => "public links".to_string(),
    };
    eprintln!(
        "somatize share: {} runs, {} files, {} objects of {shown}; {until}",
        runs.len(),
        doc.files.len(),
        doc.files.values().map(|f| f.parts.len()).sum::<usize>()
    );
    if args.put {
        let rel = format!("shares/{}-{}.json", doc.created_s, object::session_token());
        let bucket = fs.bucket();
        bucket.put(&rel, json.into()).map_err(|e| e.to_string())?;
        let link = match &links {
            Links::Presigned(d) => bucket.presign(&rel, *d).map_err(|e| e.to_string())?,
            Links::Public(base) => share::public_url(base, &rel),
        };
        super::output::print(format_args!("{link}\n"));
    }
    Ok(ExitCode::SUCCESS)
}
