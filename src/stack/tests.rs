use super::*;

const MAPS: &str = "\
55d4c0a00000-55d4c0a21000 r--p 00000000 08:01 123 /usr/bin/skiff
7ffd1c3e0000-7ffd1c401000 rw-p 00000000 00:00 0 [stack]
7ffd1c5f0000-7ffd1c5f2000 r-xp 00000000 00:00 0 [vdso]
";

#[test]
fn finds_the_mapping_holding_an_address() {
    assert_eq!(
        mapping_containing(MAPS, 0x7ffd_1c40_0ff8),
        Some((0x7ffd_1c3e_0000, 0x7ffd_1c40_1000))
    );
    assert_eq!(mapping_containing(MAPS, 0x7ffd_1c40_1000), None);
    assert_eq!(mapping_containing("garbage\n-\nzz-1 rw-p\n", 5), None);
}

/// Resident KiB of the mapping that holds this thread's stack, from `/proc/self/smaps`.
fn resident_stack_kib() -> u64 {
    let marker = 0u8;
    let sp = std::hint::black_box(&marker) as *const u8 as usize;
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or_default();
        if let Some((start, end)) = first.split_once('-')
            && !first.ends_with(':')
        {
            let start = usize::from_str_radix(start, 16).unwrap_or(0);
            let end = usize::from_str_radix(end, 16).unwrap_or(0);
            inside = (start..end).contains(&sp);
        } else if inside && first == "Rss:" {
            return line
                .split_whitespace()
                .nth(1)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
        }
    }
    panic!("no mapping holds the stack");
}

/// Touches `depth` frames of 4 KiB each; returns a sum so nothing is optimised away.
#[inline(never)]
fn go_deep(depth: usize) -> u64 {
    let frame = std::hint::black_box([depth as u8; 4096]);
    if depth == 0 {
        return u64::from(frame[0]);
    }
    go_deep(depth - 1) + u64::from(std::hint::black_box(&frame)[4095])
}

#[test]
fn pages_touched_below_the_frame_are_released_and_live_frames_kept() {
    let thread = std::thread::Builder::new().stack_size(4 << 20);
    let measured = thread.spawn(|| {
        let live = std::hint::black_box([7u8; 8192]);
        go_deep(256);
        let deep = resident_stack_kib();
        let released = release_unused().expect("released");
        let after = resident_stack_kib();
        assert!(live.iter().all(|&b| b == 7), "a live frame was cleared");
        (deep, released, after)
    });
    let (deep, released, after) = measured.expect("thread").join().expect("joined");
    assert!(deep >= 1024, "the deep calls touched {deep} KiB only");
    assert!(released >= 1024 * 1024, "released {released} bytes");
    assert!(
        after + 768 <= deep,
        "resident {deep} KiB before, {after} KiB after"
    );
}

#[test]
fn a_root_future_that_waits_leaves_no_deep_pages_resident() {
    let thread = std::thread::Builder::new().stack_size(4 << 20);
    let measured = thread.spawn(|| {
        smol::block_on(Releasing::new(|| async {
            go_deep(256);
            let deep = resident_stack_kib();
            // Pending once: the release runs before the next poll.
            smol::future::yield_now().await;
            (deep, resident_stack_kib())
        }))
    });
    let (deep, after) = measured.expect("thread").join().expect("joined");
    assert!(deep >= 1024, "the deep calls touched {deep} KiB only");
    assert!(
        after + 768 <= deep,
        "resident {deep} KiB before waiting, {after} KiB after"
    );
}
