//! Recording a run: the `Recorder` every way in writes through, machine readings, the frame
//! protocol of the companion's channel, and the companion itself.

pub mod companion;
pub mod demo;
pub mod frame;
pub mod machine;
pub mod recorder;
pub mod store_sink;

pub use recorder::{default_writer_id, host_name, probe, tensor_stats, Recorder};
pub use store_sink::StoreSink;
