//! `skiff::heap::configure` keeps megabyte-sized buffers out of the heap, and
//! `skiff::heap::free_bytes` sees what malloc holds free. Its own test binary: one test, one
//! thread allocating, so malloc's figures are this test's alone.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn big_buffers_freed_after_a_bigger_one_leave_no_free_memory_in_the_heap() {
    skiff::heap::configure();
    // Unconfigured, glibc would raise its mmap threshold to this block's size when it is
    // freed, and carve every later smaller big buffer from the heap.
    drop(vec![1u8; 2 << 20]);
    const BIG: usize = 900 * 1024;
    const SMALL: usize = 32 * 1024;
    let free_at_start = skiff::heap::free_bytes();
    let mut big: Vec<(Vec<u8>, Vec<u8>)> =
        (0..8).map(|i| (vec![i | 1; BIG], vec![2; 64])).collect();
    for (block, _) in &mut big {
        *block = Vec::new();
    }
    let free_after_big = skiff::heap::free_bytes();
    assert!(
        free_after_big < free_at_start + BIG as u64,
        "8 freed buffers of {BIG} B left {free_after_big} B free in malloc (from {free_at_start})"
    );
    // Small blocks come from the heap: freed between live ones, malloc holds them free.
    let mut small: Vec<(Vec<u8>, Vec<u8>)> = (0..256)
        .map(|i| (vec![i as u8 | 1; SMALL], vec![2; 64]))
        .collect();
    for (block, _) in &mut small {
        *block = Vec::new();
    }
    let free_after_small = skiff::heap::free_bytes();
    assert!(
        free_after_small >= free_after_big + 128 * SMALL as u64,
        "256 freed blocks of {SMALL} B: {free_after_small} B free in malloc (from {free_after_big})"
    );
    drop((big, small));
}
