//! `skiff::heap::release_free_memory` returns freed heap pages to the system. Its own test
//! binary: one test, one thread allocating, so the process's RssAnon is this test's alone.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn freed_memory_between_live_blocks_goes_back_to_the_system() {
    const BLOCK: usize = 32 * 1024;
    const BLOCKS: usize = 256;
    // Each freed block sits between two live ones, so it cannot merge into the top of the heap
    // (which malloc trims by itself): without a release it stays resident.
    let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..BLOCKS)
        .map(|i| (vec![i as u8 | 1; BLOCK], vec![2u8; 64]))
        .collect();
    for (block, _) in &mut pairs {
        *block = Vec::new();
    }
    let held = skiff::heap::anon_bytes().expect("RssAnon");
    skiff::heap::release_free_memory();
    let released = skiff::heap::anon_bytes().expect("RssAnon");
    let freed = (BLOCK * BLOCKS) as u64;
    assert!(
        released + freed / 2 <= held,
        "RssAnon {held} B before the release, {released} B after; {freed} B were freed"
    );
    drop(pairs);
}
