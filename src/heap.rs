//! The C allocator, set up for a long-lived process whose memory is mostly a few small caches.
//!
//! skiff keeps little (about 1.4 MB live with 1,000 namespaces), but start-up and every relist
//! decode whole lists, and a fan-out makes thousands of requests: megabytes of short-lived
//! buffers between the caches' small, long-lived entries. glibc's malloc keeps what was freed
//! for reuse and returns only the top of the heap to the system, so without help the resident
//! set stays at the high-water mark (measured: 1.9 MB in use, 5.5 MB held). Two settings fix
//! that, measured in docs/benchmarks-history.md ("Footprint on real objects"):
//!
//! - **One malloc arena** ([`configure`]): glibc gives each thread that allocates its own arena,
//!   and each keeps its own free memory; skiff's threads (the main thread, smol's executor
//!   thread, the reactor, short-lived resolver threads) allocate little at a time, so one arena
//!   costs no measurable contention. A `MALLOC_ARENA_MAX` or `glibc.malloc.arena_max` tunable
//!   in the environment is left to win.
//! - **Free memory returned** ([`release_when_idle`]): every few seconds, when the process's
//!   anonymous memory grew by more than [`RELEASE_ABOVE`] since the last release,
//!   `malloc_trim(0)` hands malloc's free pages back to the system (the middle of the heap too,
//!   not only the top). Checking costs one read of `/proc/self/status`.
//!
//! On other C libraries both are no-ops: the process works the same, keeping what it freed.
#![allow(unsafe_code)]

use std::time::Duration;

/// How often [`release_when_idle`] reads the process's anonymous memory.
pub const CHECK_EVERY: Duration = Duration::from_secs(5);
/// Growth of anonymous memory since the last release that makes another one worth its walk
/// over malloc's free lists and its system calls.
pub const RELEASE_ABOVE: u64 = 512 * 1024;

/// Limits malloc to one arena. Call first thing in `main`, before any thread starts: arenas
/// already made stay.
pub fn configure() {
    if arena_max_set_by_environment(|name| std::env::var(name).ok()) {
        return;
    }
    glibc::limit_arenas(1);
}

/// Whether the user chose the number of arenas themselves (their choice is kept).
fn arena_max_set_by_environment(var: impl Fn(&str) -> Option<String>) -> bool {
    var("MALLOC_ARENA_MAX").is_some()
        || var("GLIBC_TUNABLES").is_some_and(|t| t.contains("glibc.malloc.arena_max"))
}

/// Runs for the life of the process: every [`CHECK_EVERY`], when the process's anonymous
/// memory (`RssAnon`) grew by more than [`RELEASE_ABOVE`] since the last release, hands
/// malloc's free pages back to the system. Growth that is live data stays, and becomes the
/// new baseline; growth that was garbage is returned.
pub async fn release_when_idle() {
    if !glibc::CAN_RELEASE {
        return;
    }
    let mut baseline = anon_bytes();
    loop {
        smol::Timer::after(CHECK_EVERY).await;
        let Some(before) = anon_bytes() else {
            return;
        };
        if !worth_releasing(baseline, before) {
            continue;
        }
        release_free_memory();
        baseline = anon_bytes();
        log::debug!(
            "returned free heap memory to the system: RssAnon {} KiB before, {} KiB after",
            before / 1024,
            baseline.unwrap_or(0) / 1024
        );
    }
}

/// Hands every free page malloc holds back to the system (the middle of the heap too, not only
/// the top, which malloc trims by itself).
pub fn release_free_memory() {
    glibc::release_free_memory();
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

/// Anonymous memory grew by more than [`RELEASE_ABOVE`] since the last release (or start).
fn worth_releasing(baseline: Option<u64>, now: u64) -> bool {
    now > baseline.unwrap_or(0).saturating_add(RELEASE_ABOVE)
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

    pub fn release_free_memory() {
        // SAFETY: malloc_trim takes malloc's locks itself; pad 0 keeps nothing in reserve.
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod glibc {
    pub const CAN_RELEASE: bool = false;

    pub fn limit_arenas(_count: i32) {}

    pub fn release_free_memory() {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_only_when_anonymous_memory_grew_past_the_threshold() {
        assert!(!worth_releasing(Some(100_000), 100_000 + RELEASE_ABOVE));
        assert!(worth_releasing(Some(100_000), 100_001 + RELEASE_ABOVE));
        assert!(!worth_releasing(Some(2_000_000), 1_000_000));
        assert!(worth_releasing(None, RELEASE_ABOVE + 1));
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
    fn an_arena_count_from_the_environment_is_kept() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert!(!arena_max_set_by_environment(env(&[])));
        assert!(arena_max_set_by_environment(env(&[(
            "MALLOC_ARENA_MAX",
            "4"
        )])));
        assert!(arena_max_set_by_environment(env(&[(
            "GLIBC_TUNABLES",
            "glibc.malloc.tcache_count=0:glibc.malloc.arena_max=2"
        )])));
        assert!(!arena_max_set_by_environment(env(&[(
            "GLIBC_TUNABLES",
            "glibc.malloc.tcache_count=0"
        )])));
    }
}
