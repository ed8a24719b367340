//! Helpers on other threads for long tensors: the pool JS hands in, and what a helper runs.
//!
//! wasm here has one thread. In Node the package starts worker threads, each with its own
//! instance of this module, and hands the pool in with `useBlockHelpers`: while
//! `observeTensors` takes the blocks of a long float32 tensor from the front, the workers
//! take blocks from the back with `accumulateBlock` (see `crate::observe::ops::blocks`).

use super::*;
use crate::observe::ops::blocks::{accumulate_block, BlockKind};
use std::cell::RefCell;

thread_local! {
    /// The pool handed in by `useBlockHelpers`, if any.
    static POOL: RefCell<Option<JsPool>> = const { RefCell::new(None) };
    /// A helper's block, copied into wasm memory (reused from block to block).
    static BLOCK: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// A pool of helpers on other threads: `start(values, light, blockLen, blocks) -> bool`,
/// `claim() -> bool`, `finish(first) -> Float64Array`, and `minLen` (values).
#[derive(Clone)]
pub(super) struct JsPool {
    this: JsValue,
    start: js_sys::Function,
    claim: js_sys::Function,
    finish: js_sys::Function,
    min_len: usize,
}

/// Hand in (or, with null, take away) the pool of helpers `observeTensors` asks for help
/// with a long float32 tensor: `{start, claim, finish, minLen}` (the package's Node entry
/// does this; see pkg/helpers-node.js).
#[wasm_bindgen(js_name = useBlockHelpers)]
pub fn use_block_helpers(pool: JsValue) -> Result<(), JsError> {
    let pool = if pool.is_null() || pool.is_undefined() {
        None
    } else {
        Some(pool_from(pool)?)
    };
    POOL.with(|p| *p.borrow_mut() = pool);
    Ok(())
}

fn pool_from(this: JsValue) -> Result<JsPool, JsError> {
    let function = |name: &str| {
        js_sys::Reflect::get(&this, &JsValue::from_str(name))
            .ok()
            .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
            .ok_or_else(|| JsError::new(&format!("useBlockHelpers: the pool has no {name}()")))
    };
    let min_len = js_sys::Reflect::get(&this, &JsValue::from_str("minLen"))
        .ok()
        .and_then(|v| v.as_f64())
        .filter(|&v| v >= 1.0)
        .ok_or_else(|| JsError::new("useBlockHelpers: the pool's minLen is not a number >= 1"))?;
    Ok(JsPool {
        start: function("start")?,
        claim: function("claim")?,
        finish: function("finish")?,
        min_len: min_len as usize,
        this,
    })
}

/// The pool handed in, if any.
pub(super) fn pool() -> Option<JsPool> {
    POOL.with(|p| p.borrow().clone())
}

impl JsPool {
    pub(super) fn min_len(&self) -> usize {
        self.min_len
    }

    /// Offer a tensor's blocks; a pool that throws takes no part.
    pub(super) fn start(
        &self,
        values: &JsValue,
        kind: BlockKind,
        len: usize,
        blocks: usize,
    ) -> bool {
        let args = js_sys::Array::of4(
            values,
            &JsValue::from_bool(kind == BlockKind::Light),
            &JsValue::from_f64(len as f64),
            &JsValue::from_f64(blocks as f64),
        );
        self.start
            .apply(&self.this, &args)
            .is_ok_and(|v| v.is_truthy())
    }

    /// Whether this thread takes the next block; a pool that throws leaves it every block.
    pub(super) fn claim(&self) -> bool {
        self.claim.call0(&self.this).map_or(true, |v| v.is_truthy())
    }

    /// The helpers' blocks from `first` on; nothing (so every block is done here) when the
    /// pool throws or answers something else.
    pub(super) fn finish(&self, first: usize) -> Vec<f64> {
        self.finish
            .call1(&self.this, &JsValue::from_f64(first as f64))
            .ok()
            .and_then(|v| v.dyn_into::<js_sys::Float64Array>().ok())
            .map_or_else(Vec::new, |a| a.to_vec())
    }
}

/// What a helper runs: the accumulator of one block of a long float32 tensor, full (the
/// eight statistics) or `light` (sum of squares and counts), as plain numbers.
#[wasm_bindgen(js_name = accumulateBlock)]
pub fn accumulate_block_js(values: &js_sys::Float32Array, light: bool) -> Vec<f64> {
    let kind = if light {
        BlockKind::Light
    } else {
        BlockKind::Full
    };
    BLOCK.with(|b| {
        let mut b = b.borrow_mut();
        b.resize(values.length() as usize, 0.0);
        values.copy_to(&mut b);
        accumulate_block(kind, &b)
    })
}
