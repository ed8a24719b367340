//! The single-pass engine: many reductions over one stream of values, fed chunk by chunk.
//!
//! Plans whose transforms are element-wise (plus `flatten`/`per_row`) and whose reduction can
//! stream share *streams*: one per distinct transform chain, holding one `Moments` for every
//! moment-type reduction on it, plus sparsity, histogram and channel accumulators. The rest
//! (quantiles, auto-range histograms, ranks, `center`, `per_column`) are computed after the
//! pass from the values, which are then kept once for all of them.

use super::reductions::{self, ChannelAcc, HistogramAcc, SparsityAcc, SumSqAcc};
use super::transforms::{self, Elementwise};
use super::{Chunk, OpError};
use crate::math::stats::{Element, Moments};
use crate::observe::registry::{Plan, Reduction, Transform};
use crate::observe::value::Value;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What a registered plan reads its value from.
#[derive(Debug)]
enum Task {
    /// It cannot run on this shape.
    Failed(OpError),
    /// A moment-type reduction on a stream.
    Moment { stream: usize, reduction: Reduction },
    /// A sparsity accumulator (per row) on a stream.
    Sparsity { stream: usize, index: usize },
    /// A fixed-range histogram on a stream.
    Histogram { stream: usize, index: usize },
    /// The channel accumulator of a stream.
    Channel { stream: usize },
    /// Computed after the pass from the kept values.
    Held(Plan),
}

/// The moment-type accumulators of a stream, one per group: full `Moments`, or only the sum
/// of squares when every moment reduction on the stream is light.
#[derive(Debug)]
enum MomentAcc {
    Full(Vec<Moments>),
    Light(Vec<SumSqAcc>),
}

/// Values per block of a long slice: each block gets its own accumulator and the blocks are
/// merged in order, so the result does not depend on how many threads ran or which thread
/// took which block.
const BLOCK: usize = 1 << 20;

/// How many values to copy in at a time when a tensor is streamed in from outside memory the
/// engine can read, for batches taking chunks of `chunk_len` (the least of their
/// [`Batch::chunk_len`]): whole [`BLOCK`]s, and a whole number of `chunk_len` chunks, so that
/// the batches see the same chunks and blocks, and so give the same bits, as when fed the
/// whole tensor.
pub fn stream_len(chunk_len: usize) -> usize {
    match chunk_len {
        0 => BLOCK,
        n if n >= BLOCK => BLOCK,
        n => n * (BLOCK / n),
    }
}

/// Values per block of a long tensor, [`BLOCK`], for the helpers of [`super::blocks`].
pub const BLOCK_LEN: usize = BLOCK;

/// Which moment accumulator a block takes: full [`Moments`] or only [`SumSqAcc`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    Full,
    Light,
}

impl BlockKind {
    /// How many numbers a block's accumulator is handed back as.
    pub fn fields(self) -> usize {
        match self {
            BlockKind::Full => Moments::FIELDS,
            BlockKind::Light => SumSqAcc::FIELDS,
        }
    }
}

/// One block's accumulator, fresh and fed `values`, as plain numbers: what a batch of this
/// kind computes for the block itself (see [`Batch::fold_block`]).
pub fn accumulate_block(kind: BlockKind, values: &[f32]) -> Vec<f64> {
    match kind {
        BlockKind::Full => accumulate(values, &Moments::new, &|a, v| a.push_slice(v))
            .to_fields()
            .to_vec(),
        BlockKind::Light => accumulate(values, &SumSqAcc::default, &|a, v| a.feed(v))
            .to_fields()
            .to_vec(),
    }
}

/// Values each thread must have, at least, before another thread is started: below this,
/// starting a thread (and waiting for it on a loaded machine) costs more than its share.
#[cfg(not(target_arch = "wasm32"))]
const PER_THREAD_MIN: usize = 1 << 22;

/// The most threads a slice is split across; 0 means the machine's cores (at most 8).
static MAX_THREADS: AtomicUsize = AtomicUsize::new(0);

/// Cap the threads the engine uses for one slice (natively; wasm always uses one).
/// `0` restores the default, the machine's cores (at most 8). For benchmarks that compare
/// single-threaded speed; it applies to the whole process.
pub fn set_max_threads(n: usize) {
    MAX_THREADS.store(n, Ordering::Relaxed);
}

/// How many threads a slice of `len` values is split across: one per [`PER_THREAD_MIN`]
/// values, up to the cap (natively); one in wasm.
fn threads_for(len: usize) -> usize {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let cap = match MAX_THREADS.load(Ordering::Relaxed) {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get().min(8)),
            n => n,
        };
        (len / PER_THREAD_MIN).clamp(1, cap)
    }
    #[cfg(target_arch = "wasm32")]
    {
        let _ = len;
        1
    }
}

/// One part's accumulator: a fresh one, fed the part.
fn accumulate<T, A>(part: &[T], fresh: &impl Fn() -> A, push: &impl Fn(&mut A, &[T])) -> A {
    let mut a = fresh();
    push(&mut a, part);
    a
}

/// Accumulate a slice with `fresh`/`push` block by block ([`BLOCK`]), on threads when it is
/// long, folding the blocks' accumulators back in order with `merge`.
fn split_accumulate<T, A>(
    values: &[T],
    fresh: impl Fn() -> A + Sync,
    push: impl Fn(&mut A, &[T]) + Sync,
    mut merge: impl FnMut(&A),
) where
    T: Copy + Sync,
    A: Send,
{
    let threads = threads_for(values.len());
    #[cfg(not(target_arch = "wasm32"))]
    if threads > 1 {
        on_threads(values, threads, &fresh, &push)
            .iter()
            .for_each(&mut merge);
        return;
    }
    let _ = threads;
    for block in values.chunks(BLOCK) {
        merge(&accumulate(block, &fresh, &push));
    }
}

/// The blocks' accumulators, in order, filled by `threads` threads (this one included) that
/// each take the next unclaimed block until none is left, so that a thread the machine
/// schedules late takes fewer blocks instead of holding the others up.
#[cfg(not(target_arch = "wasm32"))]
fn on_threads<T, A>(
    values: &[T],
    threads: usize,
    fresh: &(impl Fn() -> A + Sync),
    push: &(impl Fn(&mut A, &[T]) + Sync),
) -> Vec<A>
where
    T: Copy + Sync,
    A: Send,
{
    let blocks: Vec<&[T]> = values.chunks(BLOCK).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(block) = blocks.get(i) else {
                return done;
            };
            done.push((i, accumulate(block, fresh, push)));
        }
    };
    let mut done = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut done = work();
        for h in helpers {
            done.extend(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        done
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, a)| a).collect()
}

impl MomentAcc {
    fn feed<T: Element + Sync>(&mut self, group: usize, values: &[T]) {
        match self {
            MomentAcc::Full(m) => {
                let m = &mut m[group];
                split_accumulate(values, Moments::new, |a, v| a.push_slice(v), |p| m.merge(p));
            }
            MomentAcc::Light(m) => {
                let m = &mut m[group];
                split_accumulate(values, SumSqAcc::default, |a, v| a.feed(v), |p| m.merge(p));
            }
        }
    }

    fn value(&self, group: usize, r: &Reduction) -> Option<f64> {
        match self {
            MomentAcc::Full(m) => reductions::from_stats(r, &m[group].finish()).flatten(),
            MomentAcc::Light(m) => m[group].value(r).flatten(),
        }
    }
}

/// The accumulators behind one element-wise transform chain.
#[derive(Debug)]
struct Stream {
    chain: Vec<Elementwise>,
    /// For `per_row`: the length of a row and the number of rows.
    rows: Option<(usize, usize)>,
    /// The moment-type reductions on this stream, and their accumulators once feeding starts.
    moment_kinds: Vec<Reduction>,
    moments: Option<MomentAcc>,
    sparsity: Vec<Vec<SparsityAcc>>,
    histograms: Vec<HistogramAcc>,
    channel: Option<ChannelAcc>,
    pos: usize,
    scratch: Vec<f64>,
    /// Values converted to f64, when a stream cannot take the stored type directly.
    converted: Vec<f64>,
}

impl Stream {
    fn new(chain: Vec<Elementwise>, rows: Option<(usize, usize)>) -> Self {
        Stream {
            chain,
            rows,
            moment_kinds: Vec::new(),
            moments: None,
            sparsity: Vec::new(),
            histograms: Vec::new(),
            channel: None,
            pos: 0,
            scratch: Vec::new(),
            converted: Vec::new(),
        }
    }

    fn groups(&self) -> usize {
        self.rows.map_or(1, |(_, n)| n)
    }

    /// Choose the moment accumulators, once, after every plan is registered.
    fn ready(&mut self) {
        if self.moments.is_some() || self.moment_kinds.is_empty() {
            return;
        }
        let groups = self.groups();
        self.moments = Some(if self.moment_kinds.iter().all(reductions::is_light) {
            MomentAcc::Light(vec![SumSqAcc::default(); groups])
        } else {
            MomentAcc::Full(vec![Moments::new(); groups])
        });
    }

    /// Feed values in their stored type: straight into the moment accumulators when nothing
    /// else on the stream needs them, else converted to f64 once.
    /// Whether values go straight into the moment accumulators in their stored type.
    fn direct(&self) -> bool {
        self.chain.is_empty()
            && self.rows.is_none()
            && self.sparsity.is_empty()
            && self.histograms.is_empty()
            && self.channel.is_none()
    }

    fn feed_typed<T: Element + Sync>(&mut self, chunk: &[T]) {
        self.ready();
        if self.direct() {
            if let Some(m) = &mut self.moments {
                m.feed(0, chunk);
            }
            self.pos += chunk.len();
            return;
        }
        let mut buf = std::mem::take(&mut self.converted);
        buf.clear();
        buf.extend(chunk.iter().map(|&x| x.into()));
        self.feed(&buf);
        self.converted = buf;
    }

    fn feed(&mut self, chunk: &[f64]) {
        self.ready();
        let values: &[f64] = if self.chain.is_empty() {
            chunk
        } else {
            self.scratch.clear();
            self.scratch.extend_from_slice(chunk);
            transforms::apply_chain(&self.chain, &mut self.scratch);
            &self.scratch
        };
        match self.rows {
            None => {
                if let Some(m) = &mut self.moments {
                    m.feed(0, values);
                }
                self.sparsity.iter_mut().for_each(|s| s[0].feed(values));
                self.histograms.iter_mut().for_each(|h| h.feed(values));
                if let Some(c) = &mut self.channel {
                    c.feed(values);
                }
            }
            Some((len, _)) if len > 0 => {
                let mut rest = values;
                let mut pos = self.pos;
                while !rest.is_empty() {
                    let (row, offset) = (pos / len, pos % len);
                    let (piece, tail) = rest.split_at((len - offset).min(rest.len()));
                    if let Some(m) = &mut self.moments {
                        m.feed(row, piece);
                    }
                    self.sparsity.iter_mut().for_each(|s| s[row].feed(piece));
                    pos += piece.len();
                    rest = tail;
                }
            }
            Some(_) => {}
        }
        self.pos += chunk.len();
    }

    fn moment(&self, r: &Reduction) -> Value {
        let per_group: Vec<Option<f64>> = match &self.moments {
            Some(m) => (0..self.groups()).map(|g| m.value(g, r)).collect(),
            None => Vec::new(),
        };
        self.shape_value(per_group)
    }

    fn shape_value(&self, per_group: Vec<Option<f64>>) -> Value {
        match self.rows {
            Some(_) => Value::Vector(per_group),
            None => Value::Scalar(per_group.first().copied().flatten()),
        }
    }
}

/// Reductions of one stream of values (one tensor, or several concatenated), in one pass.
#[derive(Debug)]
pub struct Batch {
    /// The tensor's shape; `None` for a flat concatenation of several tensors.
    shape: Option<Vec<usize>>,
    streams: Vec<Stream>,
    tasks: Vec<Task>,
    kept: Option<Vec<f64>>,
    fed: usize,
}

/// Whether a plan can ride a stream, and if so its element-wise chain.
fn streamable(plan: &Plan) -> Option<Vec<Elementwise>> {
    let reduction_streams = reductions::is_moment(&plan.reduction)
        || matches!(
            plan.reduction,
            Reduction::Sparsity { .. }
                | Reduction::Histogram { range: Some(_), .. }
                | Reduction::ChannelActivity
        );
    if !reduction_streams {
        return None;
    }
    let mut chain = Vec::new();
    for &t in &plan.transforms {
        match t {
            Transform::Identity | Transform::Flatten | Transform::PerRow => {}
            Transform::Center | Transform::PerColumn => return None,
            other => chain.push(Elementwise::of(other)?),
        }
    }
    Some(chain)
}

impl Batch {
    /// For one tensor of this shape.
    pub fn new(shape: &[usize]) -> Self {
        Batch {
            shape: Some(shape.to_vec()),
            streams: Vec::new(),
            tasks: Vec::new(),
            kept: None,
            fed: 0,
        }
    }

    /// For several tensors read one after another and reduced as one flat vector.
    pub fn flat() -> Self {
        Batch {
            shape: None,
            ..Batch::new(&[])
        }
    }

    fn check_shape(&self) -> Vec<usize> {
        self.shape.clone().unwrap_or_else(|| vec![self.fed])
    }

    /// Register a plan; returns its index in the results of [`Self::finish`].
    pub fn add(&mut self, plan: &Plan) -> usize {
        let task = self.task(plan).unwrap_or_else(Task::Failed);
        self.tasks.push(task);
        self.tasks.len() - 1
    }

    fn task(&mut self, plan: &Plan) -> Result<Task, OpError> {
        let shape = self.check_shape();
        let layout = transforms::layout(&plan.transforms, &shape)?;
        reductions::check_shape(&plan.reduction, &layout.group_shape)?;
        let Some(chain) = streamable(plan) else {
            self.kept.get_or_insert_with(Vec::new);
            return Ok(Task::Held(plan.clone()));
        };
        if layout.grouped && self.shape.is_none() {
            return Err(OpError::Shape {
                op: "per_row".into(),
                shape,
                need: "one tensor, not several concatenated".into(),
            });
        }
        let rows = layout
            .grouped
            .then(|| (layout.group_shape.iter().product(), layout.groups));
        let stream = self.stream(chain, rows);
        let s = &mut self.streams[stream];
        let groups = s.groups();
        Ok(match &plan.reduction {
            Reduction::Sparsity { eps } => {
                s.sparsity.push(vec![SparsityAcc::new(*eps); groups]);
                Task::Sparsity {
                    stream,
                    index: s.sparsity.len() - 1,
                }
            }
            Reduction::Histogram {
                bins,
                range: Some((lo, hi)),
            } => {
                s.histograms.push(HistogramAcc::new(*bins, *lo, *hi));
                Task::Histogram {
                    stream,
                    index: s.histograms.len() - 1,
                }
            }
            Reduction::ChannelActivity => {
                s.channel
                    .get_or_insert_with(|| ChannelAcc::new(&layout.group_shape));
                Task::Channel { stream }
            }
            r => {
                s.moment_kinds.push(r.clone());
                Task::Moment {
                    stream,
                    reduction: r.clone(),
                }
            }
        })
    }

    fn stream(&mut self, chain: Vec<Elementwise>, rows: Option<(usize, usize)>) -> usize {
        if let Some(i) = self
            .streams
            .iter()
            .position(|s| s.chain == chain && s.rows == rows)
        {
            return i;
        }
        self.streams.push(Stream::new(chain, rows));
        self.streams.len() - 1
    }

    /// Feed the next values, in order.
    pub fn feed(&mut self, chunk: &[f64]) {
        self.feed_typed(chunk);
    }

    /// Feed the next values in their stored type (see [`super::for_each_native_chunk`]).
    pub fn feed_chunk(&mut self, chunk: Chunk<'_>) {
        match chunk {
            Chunk::F32(c) => self.feed_typed(c),
            Chunk::F64(c) => self.feed_typed(c),
        }
    }

    /// How long the chunks fed to this batch may be: a whole tensor at once when every
    /// stream takes values directly (so long tensors can be split across threads), else
    /// chunks that stay in cache while converted.
    pub fn chunk_len(&self) -> usize {
        if self.kept.is_none() && self.streams.iter().all(Stream::direct) {
            usize::MAX
        } else {
            super::NATIVE_CHUNK
        }
    }

    fn feed_typed<T: Element + Sync>(&mut self, chunk: &[T]) {
        if let Some(kept) = &mut self.kept {
            kept.extend(chunk.iter().map(|&x| x.into()));
        }
        self.streams.iter_mut().for_each(|s| s.feed_typed(chunk));
        self.fed += chunk.len();
    }

    /// When this batch's values reach its accumulators only as blocks of [`BLOCK`] values
    /// into one moment accumulator (every plan a moment-type reduction of the whole tensor),
    /// the kind of that accumulator: its blocks can then be accumulated elsewhere and folded
    /// in with [`Self::fold_block`]. `None` otherwise.
    pub fn block_kind(&mut self) -> Option<BlockKind> {
        let [stream] = self.streams.as_mut_slice() else {
            return None;
        };
        if self.kept.is_some() || !stream.direct() {
            return None;
        }
        stream.ready();
        match stream.moments.as_ref()? {
            MomentAcc::Full(_) => Some(BlockKind::Full),
            MomentAcc::Light(_) => Some(BlockKind::Light),
        }
    }

    /// Fold in the accumulator of the next block, `len` values accumulated elsewhere by
    /// [`accumulate_block`] (the same as feeding the block here); `false`, and nothing
    /// folded, when the fields are not of this batch's [`Self::block_kind`].
    pub fn fold_block(&mut self, fields: &[f64], len: usize) -> bool {
        let [stream] = self.streams.as_mut_slice() else {
            return false;
        };
        let folded = match &mut stream.moments {
            Some(MomentAcc::Full(m)) => Moments::from_fields(fields).map(|p| m[0].merge(&p)),
            Some(MomentAcc::Light(m)) => SumSqAcc::from_fields(fields).map(|p| m[0].merge(&p)),
            None => None,
        };
        if folded.is_some() {
            stream.pos += len;
            self.fed += len;
        }
        folded.is_some()
    }

    /// The value of every registered plan, in the order they were added.
    pub fn finish(mut self) -> Vec<Result<Value, OpError>> {
        self.streams.iter_mut().for_each(Stream::ready);
        let shape = self.check_shape();
        let kept = self.kept.take().unwrap_or_default();
        let mut held: Vec<(Vec<Transform>, transforms::Shaped)> = Vec::new();
        let mut out = Vec::with_capacity(self.tasks.len());
        for task in &self.tasks {
            out.push(match task {
                Task::Failed(e) => Err(e.clone()),
                Task::Moment { stream, reduction } => Ok(self.streams[*stream].moment(reduction)),
                Task::Sparsity { stream, index } => {
                    let s = &self.streams[*stream];
                    Ok(s.shape_value(s.sparsity[*index].iter().map(|a| a.finish()).collect()))
                }
                Task::Histogram { stream, index } => {
                    Ok(self.streams[*stream].histograms[*index].clone().finish())
                }
                Task::Channel { stream } => Ok(self.streams[*stream]
                    .channel
                    .as_ref()
                    .map_or(Value::Vector(Vec::new()), |c| c.finish())),
                Task::Held(plan) => held_value(plan, &kept, &shape, &mut held),
            });
        }
        out
    }
}

/// A held plan's value, transforming the kept values once per distinct transform chain.
fn held_value(
    plan: &Plan,
    kept: &[f64],
    shape: &[usize],
    cache: &mut Vec<(Vec<Transform>, transforms::Shaped)>,
) -> Result<Value, OpError> {
    let i = match cache.iter().position(|(t, _)| *t == plan.transforms) {
        Some(i) => i,
        None => {
            let shaped = transforms::apply(&plan.transforms, kept.to_vec(), shape)?;
            cache.push((plan.transforms.clone(), shaped));
            cache.len() - 1
        }
    };
    let s = &cache[i].1;
    if !s.grouped {
        return reductions::reduce_values(&plan.reduction, &s.values, &s.group_shape);
    }
    let len: usize = s.group_shape.iter().product();
    let mut per_group = Vec::with_capacity(s.groups);
    for g in 0..s.groups {
        let values = s.values.get(g * len..(g + 1) * len).unwrap_or(&[]);
        let v = reductions::reduce_values(&plan.reduction, values, &s.group_shape)?;
        per_group.push(v.as_scalar());
    }
    Ok(Value::Vector(per_group))
}
