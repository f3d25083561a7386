//! A process's memory as the kernel accounts it: `/proc/PID/status` figures (median over
//! samples) and where the resident pages are, by mapping, from `/proc/PID/smaps`.

use crate::support::skiff::proc_status_kib;
use std::time::Duration;

/// Samples taken, and the pause between them.
const SAMPLES: usize = 10;
const SAMPLE_EVERY: Duration = Duration::from_millis(200);

/// Memory of one process, in KiB.
#[derive(Debug, Clone, Copy, Default)]
pub struct Footprint {
    pub rss: u64,
    pub anon: u64,
    pub file: u64,
    /// VmHWM: the peak RSS since the process started.
    pub peak: u64,
    pub threads: u64,
    /// Resident pages of the binary itself (file-backed), from smaps.
    pub binary: u64,
    /// Resident pages of shared libraries (libssl, libcrypto, libc, ...).
    pub libraries: u64,
    /// The main thread's malloc heap (`[heap]`, glibc's main arena).
    pub heap: u64,
    /// Other anonymous mappings: further malloc arenas (one per thread that allocates), thread
    /// stacks, large allocations glibc maps on their own.
    pub other_anon: u64,
}

impl Footprint {
    /// Median of [`SAMPLES`] readings of `pid`, with the peak and smaps breakdown at the end.
    pub fn of(pid: u32) -> Footprint {
        let mut samples: Vec<(u64, u64, u64)> = (0..SAMPLES)
            .filter_map(|_| {
                std::thread::sleep(SAMPLE_EVERY);
                Some((
                    proc_status_kib(pid, "VmRSS")?,
                    proc_status_kib(pid, "RssAnon")?,
                    proc_status_kib(pid, "RssFile")?,
                ))
            })
            .collect();
        assert!(!samples.is_empty(), "no memory figures readable for {pid}");
        samples.sort_unstable();
        let (rss, anon, file) = samples[samples.len() / 2];
        let mut footprint = Footprint {
            rss,
            anon,
            file,
            peak: proc_status_kib(pid, "VmHWM").unwrap_or(0),
            threads: proc_status_kib(pid, "Threads").unwrap_or(0),
            ..Footprint::default()
        };
        footprint.add_smaps(pid);
        footprint
    }

    /// Sums each mapping's `Rss:` into the category of its path.
    fn add_smaps(&mut self, pid: u32) {
        let Ok(smaps) = std::fs::read_to_string(format!("/proc/{pid}/smaps")) else {
            return;
        };
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
        let exe = exe.to_string_lossy();
        let mut path = String::new();
        for line in smaps.lines() {
            let mut fields = line.split_whitespace();
            let first = fields.next().unwrap_or_default();
            if first.contains('-') && !first.ends_with(':') {
                // A mapping's header: address perms offset dev inode [path]
                path = fields.nth(4).unwrap_or_default().to_owned();
                continue;
            }
            if first != "Rss:" {
                continue;
            }
            let kib: u64 = fields.next().and_then(|v| v.parse().ok()).unwrap_or(0);
            match path.as_str() {
                p if !exe.is_empty() && p == exe => self.binary += kib,
                "[heap]" => self.heap += kib,
                p if p.starts_with('/') => self.libraries += kib,
                _ => self.other_anon += kib,
            }
        }
    }
}

pub fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

/// One row of the table [`header`] starts.
pub fn row(scenario: &str, f: &Footprint) {
    println!(
        "| {scenario:<44} | {:>5} | {:>7} | {:>7} | {:>5} | {:>3} | {:>6} | {:>4} | {:>4} | {:>9} |",
        mib(f.rss),
        mib(f.anon),
        mib(f.file),
        mib(f.peak),
        f.threads,
        mib(f.binary),
        mib(f.libraries),
        mib(f.heap),
        mib(f.other_anon),
    );
}

pub fn header() {
    println!(
        "| {:<44} | VmRSS | RssAnon | RssFile | VmHWM | thr | binary | libs | heap | anon rest |",
        "scenario (MiB)"
    );
    println!(
        "|{:-<46}|-------|---------|---------|-------|-----|--------|------|------|-----------|",
        ""
    );
}
