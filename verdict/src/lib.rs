//! The verdict: health flags at thresholds that are plain data, with no dependencies at all.

/// The health flags this crate knows, by name.
pub const FLAGS: &[&str] = &[
    "NAN",
    "INF",
    "VANISHING",
    "EXPLODING",
    "DEAD",
    "SATURATED",
    "STALLED",
    "OVERSTEPPING",
    "DEAD_CHANNELS",
    "IGNORED_CHANNELS",
    "LEAKAGE",
    "NARROWING",
    "MISSING_NORMALISATION",
    "LOSING_PLASTICITY",
];

/// Whether `name` is a flag this crate knows (`DEAD_CHANNELS(3)` counts as `DEAD_CHANNELS`).
pub fn is_flag(name: &str) -> bool {
    let base = name.split('(').next().unwrap_or(name);
    FLAGS.contains(&base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_its_flags_and_their_counted_forms() {
        for (name, want) in [
            ("NAN", true),
            ("DEAD_CHANNELS(3)", true),
            ("LOSING_PLASTICITY", true),
            ("nan", false),
            ("HEALTHY", false),
        ] {
            assert_eq!(is_flag(name), want, "is_flag({name:?})");
        }
    }
}
