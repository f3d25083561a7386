use super::*;

fn owner(name: &str) -> Owner {
    Owner {
        namespace: "src".into(),
        name: name.into(),
    }
}

fn update(ns: &str, by: Option<&str>) -> Update {
    Update {
        namespace: ns.into(),
        resource_version: "1".into(),
        record: None,
        changed_by: by.and_then(FieldManager::intern),
        held: crate::mirror::payload::HeldMaps::default(),
    }
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// A fighter that changes `ns` back as soon as skiff restores it: each reconcile plans the
/// restoration again. Returns the times (from `t0`) of skiff's restorations before `until`,
/// following the requeues the gate asks for.
fn fight(
    contests: &Contests,
    m: &Owner,
    ns: &str,
    hash: Digest,
    t0: Instant,
    until: Duration,
) -> Vec<Duration> {
    let mut restored = Vec::new();
    let mut now = t0;
    while now < t0 + until {
        let mut updates = vec![update(ns, Some("argocd-controller"))];
        let gate = contests.gate(m, (hash, ConflictPolicy::Restore), &mut updates, now);
        if !updates.is_empty() {
            restored.push(now - t0);
        }
        // The fighter's change arrives 10 ms after a restoration; otherwise the requeue.
        now += if updates.is_empty() {
            gate.next.expect("a held restoration asks to run again")
        } else {
            Duration::from_millis(10)
        };
    }
    restored
}

#[test]
fn a_one_off_edit_is_restored_at_once() {
    let contests = Contests::default();
    let (m, t0) = (owner("m"), Instant::now());
    let mut updates = vec![update("a", Some("kubectl-edit"))];
    let gate = contests.gate(
        &m,
        (Digest::of(b"h"), ConflictPolicy::Restore),
        &mut updates,
        t0,
    );
    assert_eq!(updates.len(), 1, "the first restoration is not held");
    assert!(gate.held.is_empty() && gate.contested.is_empty());
    assert_eq!(gate.next, None);
}

#[test]
fn restorations_undone_again_and_again_back_off_and_make_the_copy_contested() {
    let contests = Contests::default();
    let (m, t0, hash) = (owner("m"), Instant::now(), Digest::of(b"h"));
    let restored = fight(&contests, &m, "a", hash, t0, secs(300.0));
    assert!(
        restored.len() <= 10,
        "{} writes in 5 min: {restored:?}",
        restored.len()
    );
    assert!(restored.len() >= 7, "it keeps restoring: {restored:?}");
    for (n, pair) in restored.windows(2).enumerate() {
        let gap = pair[1] - pair[0];
        let nominal = step(n as u32 + 1);
        assert!(
            gap >= nominal && gap <= 2 * nominal + secs(0.02),
            "step {n}: {gap:?}"
        );
    }
    let mut updates = vec![update("a", Some("argocd-controller"))];
    let gate = contests.gate(
        &m,
        (hash, ConflictPolicy::Restore),
        &mut updates,
        t0 + secs(300.0),
    );
    let by = gate.contested[0].1.map(|b| b.name().to_string());
    assert_eq!(by.as_deref(), Some("argocd-controller"));
    assert_eq!(gate.contest().writers, ["argocd-controller"]);
}

#[test]
fn contested_within_seconds_then_at_most_one_write_per_jittered_cap() {
    let contests = Contests::default();
    let (m, t0, hash) = (owner("m"), Instant::now(), Digest::of(b"h"));
    let restored = fight(&contests, &m, "a", hash, t0, secs(3600.0));
    assert!(restored[3] <= secs(0.03 + 2.0 + 4.0 + 8.0), "{restored:?}");
    let late: Vec<_> = restored.iter().filter(|t| **t >= secs(1200.0)).collect();
    for pair in late.windows(2) {
        let gap = *pair[1] - *pair[0];
        assert!(
            gap >= MAX_STEP && gap <= 2 * MAX_STEP + secs(0.02),
            "{gap:?}"
        );
    }
    let mut updates = vec![update("a", None)];
    let gate = contests.gate(
        &m,
        (hash, ConflictPolicy::Restore),
        &mut updates,
        t0 + secs(3600.0),
    );
    assert_eq!(gate.contested.len(), 1);
}

#[test]
fn the_copy_is_contested_after_three_undone_restorations() {
    let contests = Contests::default();
    let (m, hash) = (owner("m"), Digest::of(b"h"));
    let mut now = Instant::now();
    for undone in 0..=CONTESTED_AFTER {
        let gate = loop {
            let mut updates = vec![update("a", Some("fighter"))];
            let gate = contests.gate(&m, (hash, ConflictPolicy::Restore), &mut updates, now);
            if updates.is_empty() {
                now += gate.next.expect("a requeue");
            } else {
                break gate;
            }
        };
        assert_eq!(
            gate.contested.len(),
            usize::from(undone >= CONTESTED_AFTER),
            "after {undone}"
        );
        assert_eq!(gate.contested_unheld, u32::from(undone >= CONTESTED_AFTER));
        now += secs(0.01);
    }
}

#[test]
fn a_held_copy_holds_no_other_copy_or_mirror() {
    let contests = Contests::default();
    let (m, other, t0, hash) = (owner("m"), owner("other"), Instant::now(), Digest::of(b"h"));
    fight(&contests, &m, "a", hash, t0, secs(30.0));
    let now = t0 + secs(30.0);
    let mut updates = vec![update("a", None), update("b", None)];
    let gate = contests.gate(&m, (hash, ConflictPolicy::Restore), &mut updates, now);
    let written: Vec<_> = updates.iter().map(|u| u.namespace.as_str()).collect();
    assert!(written.contains(&"b"), "{written:?}");
    assert!(gate.next.is_some());
    let mut theirs = vec![update("a", None)];
    contests.gate(&other, (hash, ConflictPolicy::Restore), &mut theirs, now);
    assert_eq!(
        theirs.len(),
        1,
        "another Mirror's copy in the same namespace"
    );
}

#[test]
fn a_restoration_left_alone_for_a_while_ends_the_fight() {
    let contests = Contests::default();
    let (m, t0, hash) = (owner("m"), Instant::now(), Digest::of(b"h"));
    fight(&contests, &m, "a", hash, t0, secs(60.0));
    // The fighter stops: the restoration held back is made when due, and stays.
    let mut last = t0 + secs(60.0);
    loop {
        let mut updates = vec![update("a", None)];
        let gate = contests.gate(&m, (hash, ConflictPolicy::Restore), &mut updates, last);
        if !updates.is_empty() {
            break;
        }
        last += gate.next.expect("a requeue");
    }
    let gate = contests.gate(
        &m,
        (hash, ConflictPolicy::Restore),
        &mut Vec::new(),
        last + secs(1.0),
    );
    assert_eq!(gate.contested.len(), 1, "still contested right after");
    assert_eq!(gate.next, Some(QUIET - secs(1.0)), "runs again to end it");
    let gate = contests.gate(
        &m,
        (hash, ConflictPolicy::Restore),
        &mut Vec::new(),
        last + QUIET,
    );
    assert!(gate.contested.is_empty(), "{gate:?}");
    let mut updates = vec![update("a", None)];
    contests.gate(
        &m,
        (hash, ConflictPolicy::Restore),
        &mut updates,
        last + QUIET + secs(1.0),
    );
    assert_eq!(updates.len(), 1, "a new edit is restored at once");
    assert!(contests.lock().mirrors[&m].fights["a"].undone == 0);
}

#[test]
fn a_new_source_is_no_contest() {
    let contests = Contests::default();
    let (m, t0) = (owner("m"), Instant::now());
    fight(&contests, &m, "a", Digest::of(b"h"), t0, secs(30.0));
    let mut updates = vec![update("a", None)];
    let gate = contests.gate(
        &m,
        (Digest::of(b"new"), ConflictPolicy::Restore),
        &mut updates,
        t0 + secs(30.0),
    );
    assert_eq!(updates.len(), 1, "the new content goes out at once");
    assert!(gate.contested.is_empty());
}

#[test]
fn a_warning_at_most_every_ten_minutes_and_forgetting_drops_everything() {
    let contests = Contests::default();
    let (m, t0, hash) = (owner("m"), Instant::now(), Digest::of(b"h"));
    let mut warnings = 0;
    let mut now = t0;
    while now < t0 + secs(1800.0) {
        let mut updates = vec![update("a", Some("fighter"))];
        let gate = contests.gate(&m, (hash, ConflictPolicy::Restore), &mut updates, now);
        warnings += usize::from(gate.warn);
        now += gate.next.unwrap_or(secs(0.01)).max(secs(0.01));
    }
    assert!((1..=3).contains(&warnings), "{warnings} warnings in 30 min");
    contests.forget(&m);
    assert!(contests.lock().mirrors.is_empty());
}

#[test]
fn steps_double_from_one_second_to_the_cap() {
    assert_eq!(step(0), Duration::ZERO);
    assert_eq!(step(1), secs(1.0));
    assert_eq!(step(4), secs(8.0));
    assert_eq!(step(9), secs(256.0));
    assert_eq!(step(10), MAX_STEP);
    assert_eq!(step(u32::MAX), MAX_STEP);
}

#[test]
fn under_yield_a_copy_changed_back_once_is_left_alone_until_the_source_changes() {
    let contests = Contests::default();
    let (m, t0) = (owner("m"), Instant::now());
    let policy = |hash: &[u8]| (Digest::of(hash), ConflictPolicy::Yield);
    let mut updates = vec![update("a", Some("argocd-controller"))];
    contests.gate(&m, policy(b"h"), &mut updates, t0);
    assert_eq!(updates.len(), 1, "a one-off edit is restored at once");
    for later in [1.0, 60.0, 3600.0] {
        let mut updates = vec![update("a", Some("argocd-controller"))];
        let gate = contests.gate(&m, policy(b"h"), &mut updates, t0 + secs(later));
        assert!(updates.is_empty(), "left alone after {later} s");
        assert_eq!(
            (gate.contested.len(), gate.yielded, gate.next),
            (1, true, None)
        );
        assert!(gate.contest().yielded);
    }
    let mut updates = vec![update("a", Some("argocd-controller"))];
    let gate = contests.gate(&m, policy(b"new"), &mut updates, t0 + secs(3601.0));
    assert_eq!(updates.len(), 1, "a new source is copied once");
    assert!(gate.contested.is_empty());
}

#[test]
fn a_held_copy_the_other_writer_gives_back_counts_as_restored() {
    let contests = Contests::default();
    let (m, t0, hash) = (owner("m"), Instant::now(), Digest::of(b"h"));
    let restore = (hash, ConflictPolicy::Restore);
    fight(&contests, &m, "a", hash, t0, secs(30.0));
    let gate = contests.gate(&m, restore, &mut Vec::new(), t0 + secs(30.0));
    assert!(gate.held.is_empty());
    assert!(gate.next.is_some_and(|n| n > secs(500.0)), "{gate:?}");
    let gate = contests.gate(&m, restore, &mut Vec::new(), t0 + secs(30.0) + QUIET);
    assert_eq!(gate, Gate::default(), "the fight is over");
    assert!(contests.lock().mirrors.is_empty());
}
