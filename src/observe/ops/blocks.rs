//! Blocks of a long tensor accumulated by helpers elsewhere (other wasm instances on other
//! threads) while this thread takes its own, folded back in block order.
//!
//! A batch whose plans are all moment-type reductions of a whole tensor accumulates it in
//! blocks of [`BLOCK_LEN`] values, one fresh accumulator per block, merged in order (see
//! [`super::engine`]). Natively the blocks are shared out among threads. Where there are no
//! threads (wasm), a source may offer [`BlockHelpers`]: this thread takes blocks from the
//! front, the helpers from the back, each block's accumulator comes back as plain numbers
//! ([`accumulate_block`]), and they are merged in block order, so the result has the same
//! bits as one thread taking every block. A block a helper could not do is done here.

use super::engine::{Batch, BLOCK_LEN};
use super::Chunk;

pub use super::engine::{accumulate_block, BlockKind};

/// The fewest values a tensor must have before helpers are asked: below this, handing work
/// out costs more than it saves (natively, one thread per 2^22 values).
pub const HELPED_MIN: usize = 1 << 23;

/// A float32 tensor copied out block by block (see [`crate::observe::source::TensorSource::stream_f32`]).
pub trait F32Stream {
    /// Its shape; its values fill it.
    fn shape(&self) -> &[usize];
    /// Copy the values from `start` on into `out`, `out.len()` of them, all within the tensor.
    fn copy_f32(&self, start: usize, out: &mut [f32]);
}

/// Helpers that accumulate blocks of a tensor elsewhere, on other threads.
pub trait BlockHelpers {
    /// The fewest values a tensor must have for the helpers to be asked.
    fn min_len(&self) -> usize {
        HELPED_MIN
    }
    /// Offer the blocks of the tensor under `key`, `blocks` blocks of `block_len` values
    /// (the last may be shorter), to be accumulated as `kind`. `false` when the helpers
    /// cannot take part (none, or not for this tensor): then this thread takes every block.
    fn start(&self, key: &str, kind: BlockKind, block_len: usize, blocks: usize) -> bool;
    /// Whether this thread takes the next block from the front (`false` once every block
    /// is taken, by it or by the helpers).
    fn claim(&self) -> bool;
    /// Wait for the helpers and hand back their blocks, `first..blocks` (first = the blocks
    /// this thread took), each as `kind.fields()` numbers in block order; a block a helper
    /// could not do has NaN as its first number.
    fn finish(&self, first: usize) -> Vec<f64>;
}

/// Feed a float32 tensor to `batch` with the help of `helpers`, when the batch can take
/// blocks accumulated elsewhere and the tensor is long enough; `false` (nothing fed) when
/// not, and the caller feeds it as usual.
pub fn feed_helped(
    key: &str,
    stream: &dyn F32Stream,
    helpers: &dyn BlockHelpers,
    batch: &mut Batch,
) -> bool {
    let total: usize = stream.shape().iter().product();
    let Some(kind) = batch.block_kind() else {
        return false;
    };
    let blocks = total.div_ceil(BLOCK_LEN);
    if total < helpers.min_len() || !helpers.start(key, kind, BLOCK_LEN, blocks) {
        return false;
    }
    let mut buf = vec![0f32; BLOCK_LEN.min(total)];
    let mut mine = 0;
    while mine < blocks && helpers.claim() {
        feed_block(stream, mine, total, &mut buf, batch);
        mine += 1;
    }
    let theirs = helpers.finish(mine);
    let width = kind.fields();
    for b in mine..blocks {
        let (_, len) = block_range(b, total);
        let fields = theirs.get((b - mine) * width..(b - mine + 1) * width);
        let folded = fields.is_some_and(|f| !f[0].is_nan() && batch.fold_block(f, len));
        if !folded {
            feed_block(stream, b, total, &mut buf, batch);
        }
    }
    true
}

/// The first value and the length of block `b` of a tensor of `total` values.
fn block_range(b: usize, total: usize) -> (usize, usize) {
    let start = b * BLOCK_LEN;
    (start, BLOCK_LEN.min(total - start))
}

/// Copy block `b` into `buf` and feed it to the batch here.
fn feed_block(stream: &dyn F32Stream, b: usize, total: usize, buf: &mut [f32], batch: &mut Batch) {
    let (start, len) = block_range(b, total);
    let part = &mut buf[..len];
    stream.copy_f32(start, part);
    batch.feed_chunk(Chunk::F32(part));
}
