//! The C allocator, set up for a long-lived process whose memory is mostly a few small caches.
//!
//! skiff keeps little (about 1.6 MB live with 1,000 namespaces), but start-up and every relist
//! decode whole lists, and a fan-out makes thousands of requests: megabytes of short-lived
//! buffers between the caches' small, long-lived entries. glibc's malloc keeps what was freed
//! for reuse and returns only the top of the heap to the system, so without help the resident
//! set stays at the high-water mark (measured: 1.9 MB in use, 5.5 MB held). Three settings fix
//! that, measured in docs/benchmarks-history.md ("Footprint on real objects") and BENCHMARKS.md:
//!
//! - **One malloc arena** ([`configure`]): glibc gives each thread that allocates its own arena,
//!   and each keeps its own free memory; skiff's threads (the main thread, smol's executor
//!   thread, the reactor, short-lived resolver threads) allocate little at a time, so one arena
//!   costs no measurable contention.
//! - **Big buffers mapped on their own, always** ([`configure`]): glibc serves a block of
//!   [`MMAP_ABOVE`] or more from its own mapping, returned to the system when freed, but raises
//!   that threshold to the size of each such block freed (up to 32 MiB), so after one 1 MB list
//!   page every later megabyte-sized body (a 900 KB source's copies) is carved from the heap and
//!   leaves holes in it. Setting the threshold fixes it where it is.
//! - **Free memory returned** ([`release_when_idle`]): every few seconds, when the free memory
//!   malloc holds grew by more than [`RELEASE_ABOVE`] since the last release, `malloc_trim(0)`
//!   hands its free pages back to the system (the middle of the heap too, not only the top).
//!   Checking costs one `mallinfo2` call.
//!
//! A `MALLOC_ARENA_MAX` or `MALLOC_MMAP_THRESHOLD_` (or their `GLIBC_TUNABLES`) in the
//! environment is left to win. On other C libraries all of this is a no-op: the process works
//! the same, keeping what it freed.
#![allow(unsafe_code)]

use std::time::Duration;

pub use glibc::{free_bytes, release_free_memory};

/// How often [`release_when_idle`] reads the process's anonymous memory.
pub const CHECK_EVERY: Duration = Duration::from_secs(5);
/// Growth of the free memory malloc holds since the last release that makes another one worth
/// its walk over malloc's free lists and its system calls.
pub const RELEASE_ABOVE: u64 = 256 * 1024;
/// Blocks of this size or more get a mapping of their own, unmapped when freed: glibc's
/// initial threshold, kept there.
pub const MMAP_ABOVE: usize = 128 * 1024;

/// Limits malloc to one arena and fixes its mmap threshold. Call first thing in `main`, before
/// any thread starts: arenas already made stay.
pub fn configure() {
    let var = |name: &str| std::env::var(name).ok();
    if !set_by_environment(var, "MALLOC_ARENA_MAX", "glibc.malloc.arena_max") {
        glibc::limit_arenas(1);
    }
    if !set_by_environment(var, "MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold") {
        glibc::fix_mmap_threshold(MMAP_ABOVE);
    }
}

/// Whether the user set malloc's `variable`, or its `tunable`, themselves (their choice is kept).
fn set_by_environment(var: impl Fn(&str) -> Option<String>, variable: &str, tunable: &str) -> bool {
    var(variable).is_some() || var("GLIBC_TUNABLES").is_some_and(|t| t.contains(tunable))
}

/// Runs for the life of the process: every [`CHECK_EVERY`], when the free memory malloc holds
/// grew by more than [`RELEASE_ABOVE`] since the last release, hands malloc's free pages back
/// to the system. What a release cannot return (free pieces smaller than a page) is the new
/// baseline; free memory taken up again lowers it.
///
/// Counting malloc's free bytes rather than the process's `RssAnon`: a release in the middle
/// of a fan-out, with megabytes live, would otherwise set a baseline that the garbage the
/// fan-out leaves once it ends never exceeds.
pub async fn release_when_idle() {
    if !glibc::CAN_RELEASE {
        return;
    }
    let mut baseline = 0;
    loop {
        smol::Timer::after(CHECK_EVERY).await;
        let free = free_bytes();
        baseline = baseline.min(free);
        if !worth_releasing(baseline, free) {
            continue;
        }
        let before = anon_bytes().unwrap_or(0);
        release_free_memory();
        baseline = free_bytes();
        log::debug!(
            "returned free heap memory to the system: {} KiB free in malloc, RssAnon {} KiB \
             before, {} KiB after",
            free / 1024,
            before / 1024,
            anon_bytes().unwrap_or(0) / 1024
        );
    }
}

/// The process's resident anonymous memory (`RssAnon` of `/proc/self/status`), in bytes.
pub fn anon_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    rss_anon(&status)
}

fn rss_anon(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    let kib: u64 = line
        .trim_start_matches("RssAnon:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// The free memory malloc holds, `free` bytes, grew by more than [`RELEASE_ABOVE`] from
/// `baseline`.
fn worth_releasing(baseline: u64, free: u64) -> bool {
    free > baseline.saturating_add(RELEASE_ABOVE)
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod glibc {
    use std::ffi::c_int;

    pub const CAN_RELEASE: bool = true;

    pub fn limit_arenas(count: c_int) {
        // SAFETY: mallopt only changes malloc's tuning; M_ARENA_MAX takes any positive count.
        if unsafe { libc::mallopt(libc::M_ARENA_MAX, count) } != 1 {
            log::debug!("malloc did not accept M_ARENA_MAX={count}");
        }
    }

    pub fn fix_mmap_threshold(bytes: usize) {
        let threshold = c_int::try_from(bytes).unwrap_or(c_int::MAX);
        // SAFETY: mallopt only changes malloc's tuning; a set M_MMAP_THRESHOLD turns off its
        // dynamic adjustment.
        if unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, threshold) } != 1 {
            log::debug!("malloc did not accept M_MMAP_THRESHOLD={threshold}");
        }
    }

    /// Hands every free page malloc holds back to the system (the middle of the heap too, not
    /// only the top, which malloc trims by itself).
    pub fn release_free_memory() {
        // SAFETY: malloc_trim takes malloc's locks itself; pad 0 keeps nothing in reserve.
        unsafe {
            libc::malloc_trim(0);
        }
    }

    /// The bytes malloc holds free, resident or not (`mallinfo2`'s `fordblks`); 0 where unknown.
    pub fn free_bytes() -> u64 {
        // SAFETY: mallinfo2 takes malloc's locks itself and returns its figures by value.
        let info = unsafe { libc::mallinfo2() };
        info.fordblks as u64
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod glibc {
    pub const CAN_RELEASE: bool = false;

    pub fn limit_arenas(_count: i32) {}

    pub fn fix_mmap_threshold(_bytes: usize) {}

    pub fn release_free_memory() {}

    pub fn free_bytes() -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_only_when_free_memory_grew_past_the_threshold() {
        assert!(!worth_releasing(100_000, 100_000 + RELEASE_ABOVE));
        assert!(worth_releasing(100_000, 100_001 + RELEASE_ABOVE));
        assert!(!worth_releasing(2_000_000, 1_000_000));
        assert!(worth_releasing(0, RELEASE_ABOVE + 1));
    }

    #[test]
    fn reads_rss_anon_from_proc_status() {
        let status =
            "Name:\tskiff\nVmRSS:\t   14236 kB\nRssAnon:\t    4584 kB\nRssFile:\t 9652 kB\n";
        assert_eq!(rss_anon(status), Some(4584 * 1024));
        assert_eq!(rss_anon("VmRSS:\t1 kB\n"), None);
        assert!(anon_bytes().is_some_and(|b| b > 0));
    }

    #[test]
    fn settings_from_the_environment_are_kept() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let arenas =
            |pairs| set_by_environment(env(pairs), "MALLOC_ARENA_MAX", "glibc.malloc.arena_max");
        assert!(!arenas(&[]));
        assert!(arenas(&[("MALLOC_ARENA_MAX", "4")]));
        assert!(arenas(&[(
            "GLIBC_TUNABLES",
            "glibc.malloc.tcache_count=0:glibc.malloc.arena_max=2"
        )]));
        assert!(!arenas(&[(
            "GLIBC_TUNABLES",
            "glibc.malloc.tcache_count=0"
        )]));
        let mmap = |pairs| {
            set_by_environment(
                env(pairs),
                "MALLOC_MMAP_THRESHOLD_",
                "glibc.malloc.mmap_threshold",
            )
        };
        assert!(mmap(&[("MALLOC_MMAP_THRESHOLD_", "65536")]));
        assert!(!mmap(&[("MALLOC_ARENA_MAX", "4")]));
    }
}
