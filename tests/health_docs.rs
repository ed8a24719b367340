//! docs/health.md stays current with the code: every metric, bound and flag is documented.

const DOC: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/health.md"));

#[test]
fn every_metric_is_in_the_vocabulary_table_with_its_readers() {
    for m in somatize::verdict::VOCABULARY {
        let used = if m.used_by.is_empty() {
            "—".to_string()
        } else {
            m.used_by.join(", ")
        };
        let row = format!("| `{}` |", m.name);
        let line = DOC.lines().find(|l| l.starts_with(&row));
        let line = line.unwrap_or_else(|| panic!("docs/health.md has no row for {}", m.name));
        assert!(
            line.ends_with(&format!("| {used} |")),
            "{}: wanted readers {used} in {line}",
            m.name
        );
    }
}

#[test]
fn every_bound_is_in_the_thresholds_table_with_its_default() {
    for b in somatize::verdict::BOUNDS {
        let row = format!("| `{}` |", b.name);
        let line = DOC.lines().find(|l| l.starts_with(&row));
        let line = line.unwrap_or_else(|| panic!("docs/health.md has no row for {}", b.name));
        let default: f64 = line
            .split('|')
            .nth(2)
            .and_then(|c| c.trim().parse().ok())
            .unwrap_or_else(|| panic!("no default in {line}"));
        assert_eq!(default, b.default, "{line}");
        let ours = matches!(b.origin, somatize::verdict::Origin::Ours(_));
        assert_eq!(
            line.contains("**ours**"),
            ours,
            "{}: origin in {line}",
            b.name
        );
    }
}

#[test]
fn every_flag_has_a_rule_row() {
    for flag in somatize::verdict::FLAGS {
        assert!(
            DOC.lines().any(|l| l.starts_with(&format!("| {flag} |"))
                || l.starts_with(&format!("| {flag}(n) |"))),
            "docs/health.md has no rule row for {flag}"
        );
    }
}
