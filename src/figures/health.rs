//! The health figures of a judged run (profile, flags, the overlaid graph): the only figures whose colour says good or bad.

use super::{flags::flags, overlaid::overlaid, profile::profile, Figure};
use crate::health::store::{depth_order, Diagnosis, HealthFigure, RunHealth};

/// A health figure of run `h` under a diagnosis; `of` is the metric a profile draws.
pub fn figure(h: &RunHealth, d: &Diagnosis, kind: HealthFigure, of: &str) -> Figure {
    match kind {
        HealthFigure::Profile => profile(&depth_order(h.seen()), &d.verdict, of),
        HealthFigure::Flags => flags(&d.verdict),
        HealthFigure::Overlaid => {
            let nodes: Vec<(String, String)> = match &h.graph {
                Some(g) => g.pairs(),
                None => h.seen().into_iter().map(|n| (n.name, n.kind)).collect(),
            };
            overlaid(&nodes, &h.places, &h.overlay(d))
        }
    }
}
