//! Reading a record back: runs, forwards, curves, facts, nodes, machines, and a live tally.
//!
//! Every function is generic over [`StoreFs`](crate::store::StoreFs), so the same code reads a
//! folder, a snapshot zip, or whatever a JS host hands in. Costs are kept honest: `runs`,
//! `forwards`, `standing` and a summarised `curve` read only indexes (and readings); `nodes`,
//! `fleet` and a fetched `curve` read one blob per forward, and `last = N` reads only the last N.
//! What could not be read is skipped and reported beside the answer ([`Answer::skipped`]).

pub mod curve;
pub mod error;
pub mod facts;
pub(crate) mod fetch;
pub mod fleet;
pub mod forwards;
pub mod kept;
pub(crate) mod lines;
pub mod live;
mod locate;
pub mod nodes;
pub mod query;
pub mod runs;
pub mod standing;

pub use curve::{curve, curve_costs, Cost, Point};
pub use error::{Answer, ReadbackError, Result, Skip};
pub use facts::facts;
pub use fleet::{fleet, FleetRow};
pub use forwards::{forwards, ForwardRow, Name, RowFields};
pub use kept::KeptLines;
pub use live::{Live, LiveOptions, ProgressRow, Tally};
pub use nodes::{nodes, NodeRow};
pub use query::query;
pub use runs::{runs, RunRow};
pub use standing::{standing, StandingRow};

/// The summarised field `curve` and `progress` read when not told another.
pub const DEFAULT_FIELD: &str = "loss.value";
