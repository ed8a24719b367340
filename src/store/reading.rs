//! Machine readings (one JSON line each, per writer) and the exit record a writer ends with.

use serde::{Deserialize, Serialize};

/// What a machine says about itself, on a clock: `readings.jsonl`, one line per reading.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Reading {
    /// When it was taken, microseconds since the Unix epoch, the writer's clock.
    pub written_us: i64,
    /// What the machine calls itself (its host name).
    pub machine: String,
    /// Share of all cores busy since the previous reading, 0..=1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy: Option<f64>,
    /// Resident memory of the recorded process tree, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<u64>,
    /// Cores available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    /// How long the writer has been up, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_us: Option<u64>,
    /// Forwards served (recorded) by this writer so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<u64>,
}

/// How a writer's recording ended: `exit.json`, written once at the end.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ExitRecord {
    pub written_us: i64,
    /// Whether the recorded command succeeded and every forward was written.
    pub ok: bool,
    /// The command's exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// The signal that ended the command, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Forwards written by this writer.
    pub forwards: u64,
    /// The last forward reached (recorded, or marked broke).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_forward: Option<u64>,
    /// What went wrong, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
