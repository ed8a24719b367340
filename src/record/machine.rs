//! This machine's readings from /proc: busy share of all cores, memory of a process tree, cores.

use crate::store::Reading;

/// CPU time counters from the first line of /proc/stat: (busy, total) jiffies.
fn cpu_times() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = line
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3)? + v.get(4).copied().unwrap_or(0);
    Some((total.saturating_sub(idle), total))
}

/// The parent pid of `pid`, from /proc/<pid>/stat (the field after the command's `)`).
fn parent_of(pid: u32) -> Option<u32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Resident memory of `pid` in bytes (VmRSS of /proc/<pid>/status).
fn rss_of(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Resident memory of `root` and all its descendants, in bytes; `None` once `root` is gone.
pub fn tree_memory(root: u32) -> Option<u64> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        if let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        {
            if let Some(ppid) = parent_of(pid) {
                pids.push((pid, ppid));
            }
        }
    }
    rss_of(root)?;
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            pids.iter()
                .filter(|&&(_, pp)| pp == parent)
                .map(|&(p, _)| p),
        );
        i += 1;
    }
    Some(tree.iter().filter_map(|&p| rss_of(p)).sum())
}

/// Takes readings on a clock: busy is measured between consecutive readings.
pub struct Machine {
    root: u32,
    last_cpu: Option<(u64, u64)>,
}

impl Machine {
    /// Readings of this machine, with memory of the process tree rooted at `root`.
    pub fn new(root: u32) -> Self {
        Machine {
            root,
            last_cpu: cpu_times(),
        }
    }

    /// A reading now (`written_us`, `machine`, `up_us`, `served` are left for the recorder).
    pub fn read(&mut self) -> Reading {
        let now = cpu_times();
        let busy = match (self.last_cpu, now) {
            (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => {
                Some((b1.saturating_sub(b0)) as f64 / (t1 - t0) as f64)
            }
            _ => None,
        };
        self.last_cpu = now.or(self.last_cpu);
        Reading {
            busy,
            memory: tree_memory(self.root),
            cores: std::thread::available_parallelism()
                .ok()
                .map(|n| n.get() as u32),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_memory_and_cores() {
        if !std::path::Path::new("/proc/self/status").exists() {
            eprintln!("skipped: no /proc on this system");
            return;
        }
        let mut m = Machine::new(std::process::id());
        let r = m.read();
        assert!(
            r.memory.is_some_and(|b| b > 1 << 20),
            "memory {:?}",
            r.memory
        );
        assert!(r.cores.is_some_and(|c| c >= 1));
        std::thread::sleep(std::time::Duration::from_millis(30));
        let r = m.read();
        assert!(
            r.busy.is_some_and(|b| (0.0..=1.0).contains(&b)),
            "busy {:?}",
            r.busy
        );
    }
}
