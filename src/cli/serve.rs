//! `somatize serve STORE [--port P]`: the page, the package and a store on 127.0.0.1, then the URL to open.

use crate::serve::{bind, serve, Site};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store folder to serve.
    store: PathBuf,
    /// The port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 8750)]
    port: u16,
    /// The folder holding www/ and pkg/ (default: the source tree this binary was built from).
    #[arg(long, env = "SOMATIZE_ASSETS")]
    assets: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    if let Some(url) = super::read::object_url(&args.store) {
        return Err(format!(
            "{}: serve reads a store folder; for a store on object storage, export a snapshot \
             (somatize export {0} -o snap.zip) and open that",
            crate::store::object::redacted(url)
        ));
    }
    let assets = super::assets_dir(args.assets);
    let site = Site::new(assets, args.store).map_err(|e| e.to_string())?;
    let listener = bind(args.port).map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    outln!(
        "serving {} on http://{addr}/ (127.0.0.1 only; Ctrl-C stops)",
        site.store.display()
    );
    outln!("open http://{addr}/www/index.html?store=/store/&live=1");
    use std::io::Write;
    let _ = std::io::stdout().flush();
    serve(site, listener).map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}
