//! The companion behind `somatize record`: starts the training command, hands it a Unix socket
//! (address in `SOMATIZE_CHANNEL`), writes every frame through a `Recorder`, takes machine
//! readings on a clock, and marks the run broke at the forward reached if the command dies.
//! With `--listen PATH` it starts no command: the training process (the Python package's
//! `watch`) starts the companion, connects to PATH, and ends with an `end` frame.

use super::frame::{read_frame, Frame, FrameError};
use super::machine::Machine;
use super::recorder::{put_stats, tensor_stats, Recorder};
use crate::health::forward::Step;
use crate::health::record::{step_stats, summary_stats, write_graph, Graph};
use crate::store::{ExitRecord, NodeStats, StoreError};
use crate::tensor::{Provenance, TypedTensor};
use std::collections::BTreeMap;
use std::io::BufReader;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The environment variable holding the channel address, `unix:<path>`.
pub const CHANNEL_ENV: &str = "SOMATIZE_CHANNEL";
/// The environment variable holding `--every` (tensors are kept every N forwards).
pub const EVERY_ENV: &str = "SOMATIZE_EVERY";

/// What `somatize record` was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    pub store: PathBuf,
    pub run: String,
    /// Keep tensors of forwards whose number is a multiple of this (facts and stats always).
    pub every: u64,
    /// The writer id of the first connection (others get `-c<k>` or their hello name).
    pub writer: String,
    pub summarising: Vec<String>,
    /// How often to take a machine reading.
    pub reading_every: Duration,
    /// Forwards in flight per writer, synced and indexed in batches (1: one at a time, each
    /// indexed before the next; see `Writer::set_pipeline`).
    pub pipeline: usize,
    /// Compute per-tensor statistics into `stats.json` for tensors the frame gave none for.
    pub stats: bool,
    /// fsync blobs and index lines (`--no-fsync` turns it off; see `Writer::durable`).
    pub durable: bool,
}

/// How a recording went.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub forwards: u64,
    pub failures: u64,
    pub status: Option<i32>,
    pub signal: Option<i32>,
    pub broke_at: Option<u64>,
}

enum Msg {
    Opened,
    Frame(usize, Box<Frame>),
    Bad(usize, FrameError),
    Closed,
}

struct Conn {
    recorder: Option<Recorder>,
    last_seen: Option<u64>,
    /// The parameters of the last frame that carried any, and its forward (for the update).
    params: Option<(u64, Step)>,
    summarising: Vec<String>,
    name: String,
    /// The `end` frame's word: `Some(None)` ended cleanly, `Some(Some(e))` ended on error `e`.
    ended: Option<Option<String>>,
}

/// Keys whose tensors feed the health metrics.
fn is_health_key(key: &str) -> bool {
    key == "loss"
        || ["param.", "grad.", "act.", "update."]
            .iter()
            .any(|p| key.starts_with(p))
}

/// The `loss` node's metrics (`loss`, `nan`, `inf`, `nonfinite`) from the frame's loss fact, when the
/// sender gave no loss statistics of its own.
fn loss_node(frame: &Frame, stats: &mut NodeStats) {
    use crate::store::{Field, Num};
    let value = frame
        .header
        .facts
        .iter()
        .find(|f| f.kind == "loss")
        .and_then(|f| f.extra.get("value"))
        .and_then(Field::from_json)
        .and_then(|v| v.as_f64());
    let Some(v) = value else { return };
    let row = stats.entry("loss".into()).or_default();
    row.entry("loss".into()).or_insert(Num(v));
    row.entry("nan".into())
        .or_insert(Num(f64::from(u8::from(v.is_nan()))));
    row.entry("inf".into())
        .or_insert(Num(f64::from(u8::from(v.is_infinite()))));
    row.entry("nonfinite".into())
        .or_insert(Num(f64::from(u8::from(!v.is_finite()))));
}

/// The graph a frame's facts name: one node per fact but the loss's, with its kind and, when
/// the fact has a `layout` string that is a valid layout, that layout (an invalid one is
/// dropped with a message, and the kind's default applies).
fn frame_graph(frame: &Frame) -> Graph {
    let mut graph = Graph::of(
        frame
            .header
            .facts
            .iter()
            .filter(|f| f.kind != "loss")
            .map(|f| (f.node.clone(), f.kind.clone())),
    );
    let layouts = frame.header.facts.iter().filter(|f| f.kind != "loss");
    for (node, fact) in graph.nodes.iter_mut().zip(layouts) {
        let Some(layout) = fact.extra.get("layout").and_then(|v| v.as_str()) else {
            continue;
        };
        match crate::health::layout::check_layout(layout) {
            Ok(()) => node.layout = Some(layout.to_string()),
            Err(e) => eprintln!("somatize record: node {}: {e}; its kind decides", node.name),
        }
    }
    graph
}

/// The frame's tensors the health metrics read, decoded, by key.
fn frame_step(frame: &Frame) -> Step {
    let mut step = Step::new();
    for (spec, (dtype, range)) in frame.header.tensors.iter().zip(&frame.layout) {
        if !is_health_key(&spec.key) {
            continue;
        }
        let Some(bytes) = frame.payload.get(range.clone()) else {
            continue;
        };
        let provenance = Provenance {
            file: "<live>".into(),
            key: spec.key.clone(),
            dtype: spec.dtype.clone(),
        };
        let data = crate::store::npy::decode(*dtype, bytes);
        if let Some(t) = TypedTensor::new(data, spec.shape.clone(), provenance) {
            step.insert(spec.key.clone(), t);
        }
    }
    step
}

impl Conn {
    /// Connection `k` before its first frame (connection 0 writes as the base writer id).
    fn new(k: usize, summarising: &[String]) -> Self {
        Conn {
            recorder: None,
            last_seen: None,
            params: None,
            summarising: summarising.to_vec(),
            ended: None,
            name: if k == 0 {
                String::new()
            } else {
                format!("c{k}")
            },
        }
    }
}

/// A fresh folder for the socket, under the system temp folder.
fn socket_dir() -> std::io::Result<PathBuf> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("somatize-{}-{nanos}", std::process::id()));
    std::fs::create_dir(&dir)?;
    Ok(dir)
}

/// The buffer a connection's headers are read through.
const READ_BUFFER: usize = 64 << 10;

fn reader_thread(k: usize, stream: UnixStream, tx: SyncSender<Msg>) {
    // Small enough that little of a frame's payload is copied through it: `read_frame` reads
    // the payload straight into its buffer (one `read` per socket-buffer's worth), and only the
    // bytes the header's read brought along pass through here.
    let mut r = BufReader::with_capacity(READ_BUFFER, stream);
    if tx.send(Msg::Opened).is_err() {
        return;
    }
    loop {
        match read_frame(&mut r) {
            Ok(Some(f)) => {
                if tx.send(Msg::Frame(k, Box::new(f))).is_err() {
                    return;
                }
            }
            Ok(None) => break,
            Err(e) => {
                let _ = tx.send(Msg::Bad(k, e));
                break;
            }
        }
    }
    let _ = tx.send(Msg::Closed);
}

fn accept_thread(listener: UnixListener, tx: SyncSender<Msg>, stop: Arc<AtomicBool>) {
    let _ = listener.set_nonblocking(true);
    let mut k = 0;
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = stream.set_nonblocking(false);
                let tx = tx.clone();
                let id = k;
                k += 1;
                std::thread::spawn(move || reader_thread(id, stream, tx));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// The companion's state while recording.
struct Session {
    opts: Options,
    /// Whether this recording has written (or found) the run's graph.json.
    graph_written: bool,
    main: Option<Recorder>,
    conns: BTreeMap<usize, Conn>,
    report: Report,
}

impl Session {
    fn recorder_for(&mut self, k: usize) -> Result<&mut Recorder, StoreError> {
        let conn = self
            .conns
            .entry(k)
            .or_insert_with(|| Conn::new(k, &self.opts.summarising));
        if conn.recorder.is_none() {
            let r = if conn.name.is_empty() {
                self.main.take()
            } else {
                None
            };
            let mut r = match r {
                Some(r) => r,
                None => Recorder::with_writer(
                    &self.opts.store,
                    &self.opts.run,
                    &format!("{}-{}", self.opts.writer, conn.name),
                )?,
            };
            r.set_summarising(conn.summarising.clone());
            r.writer().durable = self.opts.durable;
            r.writer().set_pipeline(self.opts.pipeline)?;
            conn.recorder = Some(r);
        }
        conn.recorder.as_mut().ok_or(StoreError::Refused {
            what: "no recorder".into(),
        })
    }

    fn on_frame(&mut self, k: usize, frame: &Frame) {
        if frame.header.kind.as_deref() == Some("end") {
            let conn = self
                .conns
                .entry(k)
                .or_insert_with(|| Conn::new(k, &self.opts.summarising));
            conn.ended = Some(frame.header.error.clone());
            return;
        }
        if frame.is_hello() {
            let conn = self
                .conns
                .entry(k)
                .or_insert_with(|| Conn::new(k, &self.opts.summarising));
            if let Some(w) = &frame.header.writer {
                conn.name = w.clone();
            }
            if let Some(s) = &frame.header.summarising {
                conn.summarising = s.clone();
                if let Some(r) = conn.recorder.as_mut() {
                    r.set_summarising(s.clone());
                }
            }
            return;
        }
        let forward = match frame.header.forward {
            Some(f) => f,
            None => self
                .conns
                .get(&k)
                .and_then(|c| c.last_seen)
                .map_or(0, |f| f + 1),
        };
        let every = self.opts.every.max(1);
        let mut rec = frame.record(forward, forward % every == 0);
        if self.opts.stats {
            for t in &rec.tensors {
                if !rec.stats.contains_key(t.key.as_ref()) {
                    if let Some(s) = tensor_stats(t) {
                        put_stats(&mut rec.stats, &t.key, &s);
                    }
                }
            }
        }
        self.health(k, forward, frame, &mut rec.stats);
        let crcs = (rec.tensors.len() == frame.crcs.len()).then_some(frame.crcs.as_slice());
        let result = self
            .recorder_for(k)
            .and_then(|r| r.record_with_crcs(&rec, crcs));
        if let Some(c) = self.conns.get_mut(&k) {
            c.last_seen = Some(forward);
        }
        match result {
            Ok(_) => self.report.forwards += 1,
            Err(e) => {
                self.report.failures += 1;
                eprintln!("somatize record: forward {forward} NOT recorded: {e}");
            }
        }
    }

    /// Add the per-node health metrics of a frame's summary (torch's, derived by
    /// `summary_stats`) and of its `param.*`, `grad.*`, `act.*`, `update.*` or `loss` tensors
    /// to its statistics (what the sender gave as `stats` wins, then the summary's).
    /// The update of one optimiser step comes from the frame's `update.<node>.<leaf>`
    /// tensors (the weights after the step minus those before; the frame's `param.*` are the
    /// before), else from the connection's previous forward when that one is forward − 1 and
    /// carried the parameters; with tensors every N > 1 forwards and no `update.*`, there is no
    /// update metric. Write the run's graph from the first frame whose facts name nodes (with a
    /// fact's `layout`, when it has one, as the node's layout).
    fn health(&mut self, k: usize, forward: u64, frame: &Frame, stats: &mut NodeStats) {
        loss_node(frame, stats);
        let step = frame_step(frame);
        let graph = frame_graph(frame);
        if !graph.nodes.is_empty() && !self.graph_written {
            match write_graph(&self.opts.store, &self.opts.run, &graph) {
                Ok(_) => self.graph_written = true,
                Err(e) => eprintln!("somatize record: graph.json NOT written: {e}"),
            }
        }
        // The sender's summary first (its metrics win over those of the frame's tensors).
        match frame.summary() {
            Some(Ok(summary)) => {
                for (node, row) in summary_stats(&graph, &summary) {
                    let into = stats.entry(node).or_default();
                    for (metric, v) in row {
                        into.entry(metric).or_insert(v);
                    }
                }
            }
            Some(Err(e)) => {
                eprintln!("somatize record: forward {forward}: the summary was NOT used: {e}")
            }
            None => {}
        }
        if !step.keys().any(|key| is_health_key(key)) {
            return;
        }
        let conn = self.conns.get(&k);
        let previous = conn
            .and_then(|c| c.params.as_ref())
            .filter(|(f, _)| forward.checked_sub(1) == Some(*f))
            .map(|(_, p)| p);
        match step_stats(&graph, &step, previous) {
            Ok(measured) => {
                for (node, row) in measured {
                    let into = stats.entry(node).or_default();
                    for (metric, v) in row {
                        into.entry(metric).or_insert(v);
                    }
                }
            }
            Err(e) => {
                eprintln!("somatize record: forward {forward}: health metrics NOT measured: {e}")
            }
        }
        let params: Step = step
            .into_iter()
            .filter(|(key, _)| key.starts_with("param."))
            .collect();
        let summarising = self.opts.summarising.clone();
        let c = self
            .conns
            .entry(k)
            .or_insert_with(|| Conn::new(k, &summarising));
        c.params = (!params.is_empty()).then_some((forward, params));
    }

    fn reading(&mut self, machine: &mut Machine) {
        let r = machine.read();
        let rec = match self.main.as_mut() {
            Some(m) => Some(m),
            None => self.conns.get_mut(&0).and_then(|c| c.recorder.as_mut()),
        };
        if let Some(rec) = rec {
            if let Err(e) = rec.reading(r) {
                self.report.failures += 1;
                eprintln!("somatize record: reading NOT recorded: {e}");
            }
        }
    }

    /// Index every forward still in flight, counting failures.
    fn flush_all(&mut self) {
        let recorders = self
            .main
            .iter_mut()
            .chain(self.conns.values_mut().filter_map(|c| c.recorder.as_mut()));
        for r in recorders {
            if let Err(e) = r.flush() {
                self.report.failures += 1;
                eprintln!("somatize record: a forward in flight was NOT recorded: {e}");
            }
        }
    }

    fn end(&mut self, status: ExitStatus) {
        use std::os::unix::process::ExitStatusExt;
        let died = match (status.code(), status.signal()) {
            (Some(0), _) => None,
            (Some(c), _) => Some(format!("the command exited with status {c}")),
            (None, Some(s)) => Some(format!("the command was killed by signal {s}")),
            (None, None) => Some("the command ended abnormally".to_string()),
        };
        self.end_with(status.code(), status.signal(), |_| died.clone());
    }

    /// The end of a `--listen` recording: each connection as its `end` frame said, or broke
    /// when it closed without one (the training process was killed).
    fn end_listening(&mut self) {
        let died = |c: &Conn| match &c.ended {
            Some(None) => None,
            Some(Some(e)) => Some(format!("the training process stopped: {e}")),
            None => Some(
                "the training process closed the channel without ending it (killed?)".to_string(),
            ),
        };
        let any_broke = self.conns.values().any(|c| died(c).is_some());
        self.end_with(Some(i32::from(any_broke)), None, died);
    }

    /// Mark each connection's run broke where `died` says it died, and write `exit.json`.
    fn end_with(
        &mut self,
        code: Option<i32>,
        signal: Option<i32>,
        died: impl Fn(&Conn) -> Option<String>,
    ) {
        self.report.status = code;
        self.report.signal = signal;
        if self.conns.is_empty() {
            if let Some(main) = self.main.take() {
                self.conns.insert(
                    0,
                    Conn {
                        recorder: Some(main),
                        last_seen: None,
                        params: None,
                        summarising: Vec::new(),
                        name: String::new(),
                        ended: None,
                    },
                );
            }
        }
        let failures = self.report.failures;
        for conn in self.conns.values_mut() {
            let died = died(conn);
            let Some(r) = conn.recorder.as_mut() else {
                continue;
            };
            let mut broke_at = None;
            if let Some(why) = &died {
                let at = conn.last_seen.map_or(0, |f| f + 1);
                match r.broke(at, why) {
                    Ok(_) => broke_at = Some(at),
                    Err(e) => eprintln!("somatize record: could not mark forward {at} broke: {e}"),
                }
            }
            self.report.broke_at = self.report.broke_at.or(broke_at);
            let exit = ExitRecord {
                written_us: crate::store::writer::now_us(),
                ok: died.is_none() && failures == 0,
                code,
                signal,
                forwards: r.writer().written(),
                last_forward: r.writer().last_forward(),
                error: died.or_else(|| (failures > 0).then(|| format!("{failures} writes failed"))),
            };
            if let Err(e) = r.finish(&exit) {
                eprintln!("somatize record: could not write the exit record: {e}");
                self.report.failures += 1;
            }
        }
    }
}

fn spawn(cmd: &[String], socket: &std::path::Path, every: u64) -> std::io::Result<Child> {
    let (program, args) = cmd
        .split_first()
        .ok_or_else(|| std::io::Error::other("no command given"))?;
    Command::new(program)
        .args(args)
        .env(CHANNEL_ENV, format!("unix:{}", socket.display()))
        .env(EVERY_ENV, every.max(1).to_string())
        .spawn()
}

/// Run `cmd` and record what it sends until it exits and its connections close.
pub fn record(opts: Options, cmd: &[String]) -> Result<Report, String> {
    let main = Recorder::with_writer(&opts.store, &opts.run, &opts.writer)
        .and_then(|mut r| {
            r.writer().durable = opts.durable;
            r.pipelined(opts.pipeline)
        })
        .map_err(|e| e.to_string())?
        .summarising(opts.summarising.clone());
    let dir = socket_dir().map_err(|e| format!("could not make the channel folder: {e}"))?;
    let socket = dir.join("channel.sock");
    let listener =
        UnixListener::bind(&socket).map_err(|e| format!("could not open the channel: {e}"))?;
    let (tx, rx) = sync_channel::<Msg>(2);
    let stop = Arc::new(AtomicBool::new(false));
    let acceptor = {
        let (tx, stop) = (tx.clone(), stop.clone());
        std::thread::spawn(move || accept_thread(listener, tx, stop))
    };
    drop(tx);
    let child = spawn(cmd, &socket, opts.every);
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            stop.store(true, Ordering::Relaxed);
            let _ = acceptor.join();
            let _ = std::fs::remove_dir_all(&dir);
            return Err(format!(
                "could not start {:?}: {e}",
                cmd.first().map(String::as_str).unwrap_or("")
            ));
        }
    };
    let mut machine = Machine::new(child.id());
    let reading_every = opts.reading_every;
    let mut session = Session {
        opts,
        graph_written: false,
        main: Some(main),
        conns: BTreeMap::new(),
        report: Report::default(),
    };
    session.reading(&mut machine);
    let status = pump(
        &mut session,
        &rx,
        &mut child,
        &stop,
        &mut machine,
        reading_every,
    );
    let _ = acceptor.join();
    let _ = std::fs::remove_dir_all(&dir);
    session.flush_all();
    session.reading(&mut machine);
    session.end(status.map_err(|e| format!("waiting for the command: {e}"))?);
    Ok(session.report)
}

/// How long `--listen` waits for its first connection before giving up.
pub const LISTEN_FIRST_CONNECTION: Duration = Duration::from_secs(120);

/// Record what connects to `socket` (a path this creates; it must not exist) until every
/// connection that came has closed: the training process started the companion itself and
/// ends with an `end` frame (a connection closed without one is marked broke). Machine
/// readings are of `pid` when given (the training process), else of this process.
pub fn record_listen(
    opts: Options,
    socket: &std::path::Path,
    pid: Option<u32>,
) -> Result<Report, String> {
    let main = Recorder::with_writer(&opts.store, &opts.run, &opts.writer)
        .and_then(|mut r| {
            r.writer().durable = opts.durable;
            r.pipelined(opts.pipeline)
        })
        .map_err(|e| e.to_string())?
        .summarising(opts.summarising.clone());
    let listener = UnixListener::bind(socket)
        .map_err(|e| format!("could not open the channel {}: {e}", socket.display()))?;
    let (tx, rx) = sync_channel::<Msg>(2);
    let stop = Arc::new(AtomicBool::new(false));
    let acceptor = {
        let (tx, stop) = (tx.clone(), stop.clone());
        std::thread::spawn(move || accept_thread(listener, tx, stop))
    };
    drop(tx);
    let mut machine = Machine::new(pid.unwrap_or_else(std::process::id));
    let reading_every = opts.reading_every;
    let mut session = Session {
        opts,
        graph_written: false,
        main: Some(main),
        conns: BTreeMap::new(),
        report: Report::default(),
    };
    session.reading(&mut machine);
    let mut next_reading = Instant::now() + reading_every;
    let started = Instant::now();
    let (mut open, mut opened) = (0usize, 0usize);
    loop {
        let wait = next_reading
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(50));
        match rx.recv_timeout(wait) {
            Ok(Msg::Opened) => {
                open += 1;
                opened += 1;
            }
            Ok(Msg::Frame(k, f)) => session.on_frame(k, &f),
            Ok(Msg::Bad(k, e)) => eprintln!("somatize record: connection {k}: {e}"),
            Ok(Msg::Closed) => open = open.saturating_sub(1),
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {}
        }
        if Instant::now() >= next_reading {
            session.reading(&mut machine);
            next_reading = Instant::now() + reading_every;
        }
        if opened > 0 && open == 0 {
            break;
        }
        if opened == 0 && started.elapsed() > LISTEN_FIRST_CONNECTION {
            eprintln!(
                "somatize record: nothing connected to {} in {} s; stopping",
                socket.display(),
                LISTEN_FIRST_CONNECTION.as_secs()
            );
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let _ = acceptor.join();
    let _ = std::fs::remove_file(socket);
    session.flush_all();
    session.reading(&mut machine);
    session.end_listening();
    Ok(session.report)
}

/// Write frames as they come; readings on the clock; return the command's exit status once
/// it has exited and every connection has closed (or a grace period has passed).
fn pump(
    session: &mut Session,
    rx: &Receiver<Msg>,
    child: &mut Child,
    stop: &AtomicBool,
    machine: &mut Machine,
    reading_every: Duration,
) -> std::io::Result<ExitStatus> {
    let mut next_reading = Instant::now() + reading_every;
    let mut status = None;
    let mut grace_until = None;
    loop {
        let wait = next_reading
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(50));
        match rx.recv_timeout(wait) {
            Ok(Msg::Frame(k, f)) => session.on_frame(k, &f),
            Ok(Msg::Bad(k, e)) => {
                if !matches!(e, FrameError::Truncated { .. }) || status.is_none() {
                    eprintln!("somatize record: connection {k}: {e}");
                }
            }
            Ok(Msg::Opened) | Ok(Msg::Closed) => {}
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {}
        }
        if Instant::now() >= next_reading {
            session.reading(machine);
            next_reading = Instant::now() + reading_every;
        }
        if status.is_none() {
            if let Some(s) = child.try_wait()? {
                status = Some(s);
                stop.store(true, Ordering::Relaxed);
                grace_until = Some(Instant::now() + Duration::from_secs(10));
            }
        }
        if grace_until.is_some_and(|g| Instant::now() > g) {
            eprintln!(
                "somatize record: connections still open 10 s after the command exited; stopping"
            );
            break;
        }
    }
    match status {
        Some(s) => Ok(s),
        None => child.wait(),
    }
}
