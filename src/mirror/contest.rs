//! Contested copies: another writer keeps changing a copy back, and skiff backs off.
//!
//! A restoration is a write that brings a copy back to what its Mirror wants. When the copy
//! is changed again after skiff restored it, and the source did not change meanwhile, that
//! restoration was *undone*. Only what skiff sets counts (data, its labels and annotations,
//! type): the plan asks for a restoration only when those differ, and skiff's own writes are
//! read through the own-writes record, so they never look like a change.
//!
//! - The first restoration is immediate, so a one-off hand edit is undone at once.
//! - After `n` undone restorations the next one waits `min(MAX_STEP, FIRST_STEP × 2^(n-1))`,
//!   times the repo's jitter (1 to 2): 1–2 s, 2–4 s, … up to 5–10 min.
//! - After [`CONTESTED_AFTER`] undone restorations the copy is *contested*: the Mirror says so.
//! - A restoration that stays for [`QUIET`] ends the fight: the copy is forgotten, and its next
//!   restoration is immediate again.
//! - Under `spec.conflicts: Yield`, a copy changed back once is contested at once and left as
//!   the other writer wrote it until the source changes.
//!
//! The state is per copy and in memory, only for copies restored lately: a new leader starts
//! each fight afresh (at most the first minutes' writes again, 9 per copy in 5 min). Nothing
//! here blocks: a copy whose restoration is not due is left out of the plan, and the reconcile
//! asks to run again when the earliest one falls due.

use super::copy::Owner;
use super::payload::Digest;
use super::plan::Update;
use super::types::ConflictPolicy;
use crate::kube::api::FieldManager;
use crate::metrics::{self, Gauge};
use crate::random::{self, Rng};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Undone restorations after which a copy is contested.
pub const CONTESTED_AFTER: u32 = 3;
/// The wait before the restoration after the first undone one (before jitter).
pub const FIRST_STEP: Duration = Duration::from_secs(1);
/// The longest wait between restorations (before jitter; 5–10 min with it).
pub const MAX_STEP: Duration = Duration::from_secs(5 * 60);
/// How long a restoration must stay for the fight to be over: the longest jittered step.
pub const QUIET: Duration = Duration::from_secs(10 * 60);

/// One copy's fight.
#[derive(Debug, Clone)]
struct Fight {
    /// What skiff restores the copy to: a new source starts a new fight.
    hash: Digest,
    /// Restorations changed back by another writer, one after the other.
    undone: u32,
    /// When skiff last restored the copy; `None` while the next restoration waits.
    restored: Option<Instant>,
    /// When the next restoration may be made.
    due: Instant,
    /// Who changed it back last, as it reports itself.
    by: Option<FieldManager>,
    /// Left to the other writer until the source changes (`spec.conflicts: Yield`).
    yielded: bool,
}

impl Fight {
    fn start(hash: Digest, now: Instant) -> Fight {
        Fight {
            hash,
            undone: 0,
            restored: Some(now),
            due: now,
            by: None,
            yielded: false,
        }
    }

    fn contested(&self) -> bool {
        self.yielded || self.undone >= CONTESTED_AFTER
    }

    /// Whether the fight is over: the last restoration (or due one) is [`QUIET`] old. A copy
    /// yielded stays yielded until the source changes.
    fn over(&self, now: Instant) -> bool {
        let since = now.saturating_duration_since(self.restored.unwrap_or(self.due));
        since >= QUIET && !self.yielded
    }
}

/// The nominal wait after `undone` undone restorations (0: none).
pub fn step(undone: u32) -> Duration {
    if undone == 0 {
        return Duration::ZERO;
    }
    let factor = 2u32.saturating_pow(undone - 1);
    FIRST_STEP.saturating_mul(factor).min(MAX_STEP)
}

/// The contested copies of one Mirror: their namespaces and their other writers' names, each
/// sorted, a writer that named no field manager as `unknown`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Contest {
    pub namespaces: Vec<String>,
    pub writers: Vec<String>,
    /// They are left to the other writer until the source changes (`spec.conflicts: Yield`).
    pub yielded: bool,
}

/// What the fights of one Mirror's copies mean for one reconcile.
#[derive(Debug, Default, PartialEq)]
pub struct Gate {
    /// Contested copies whose restoration was not held back (in sync now, or restored): not
    /// counted as synced, so the status does not flip with each restoration.
    pub contested_unheld: u32,
    /// Namespaces whose restoration waits (taken out of the plan).
    pub held: Vec<String>,
    /// Contested namespaces, sorted, with who changed their copy back.
    pub contested: Vec<(String, Option<FieldManager>)>,
    /// When to reconcile again: the next restoration due, or a contest to be declared over.
    pub next: Option<Duration>,
    /// A Warning Event about the contested copies is due (at most one per [`WARN_EVERY`]).
    pub warn: bool,
    /// Some copy is left to the other writer (`spec.conflicts: Yield`).
    pub yielded: bool,
}

/// The Warning Event about a Mirror's contested copies is posted at most this often.
pub const WARN_EVERY: Duration = Duration::from_secs(10 * 60);

/// The metric of contested copies, labelled by Mirror (`namespace`, `name`).
pub const METRIC: &str = "skiff_mirror_contested_copies";
const METRIC_HELP: &str = "Copies of a Mirror that another writer keeps changing back.";

/// Lists [`METRIC`] on `/metrics` before any Mirror is contested.
pub fn declare_metric() {
    metrics::declare_gauge(METRIC, METRIC_HELP);
}

impl Gate {
    /// The contested copies, as the status reports them.
    pub fn contest(&self) -> Contest {
        let namespaces = self.contested.iter().map(|(ns, _)| ns.clone()).collect();
        let mut writers: Vec<String> = self
            .contested
            .iter()
            .map(|(_, by)| by.map_or_else(|| "unknown".to_owned(), |m| m.name().to_string()))
            .collect();
        writers.sort();
        writers.dedup();
        Contest {
            namespaces,
            writers,
            yielded: self.yielded,
        }
    }
}

#[derive(Default)]
struct Copies {
    fights: BTreeMap<String, Fight>,
    /// When the last Warning Event about them was due.
    warned: Option<Instant>,
    /// The Mirror's series of [`METRIC`], from its first contest on.
    gauge: Option<Gauge>,
}

impl Copies {
    /// Whether a Warning Event is due, and the metric, for contested copies `contested`.
    fn report(&mut self, owner: &Owner, contested: usize, now: Instant) -> bool {
        if contested > 0 && self.gauge.is_none() {
            let labels = [
                ("namespace", owner.namespace.as_str()),
                ("name", owner.name.as_str()),
            ];
            self.gauge = Some(metrics::gauge(METRIC, METRIC_HELP, &labels));
        }
        if let Some(gauge) = &self.gauge {
            gauge.set(contested as f64);
        }
        let due = self
            .warned
            .is_none_or(|at| now.saturating_duration_since(at) >= WARN_EVERY);
        if contested > 0 && due {
            self.warned = Some(now);
            return true;
        }
        false
    }
}

/// The fights of every Mirror's copies, in this replica.
pub struct Contests {
    state: Mutex<State>,
}

struct State {
    mirrors: HashMap<Owner, Copies>,
    jitter: Rng,
}

impl Default for Contests {
    fn default() -> Contests {
        Contests {
            state: Mutex::new(State {
                mirrors: HashMap::new(),
                jitter: random::rng(),
            }),
        }
    }
}

impl Contests {
    /// Takes out of `updates` the restorations not due yet, recording the others as made at
    /// `now`, and says where `owner`'s copies are fought over. `hash` is what they should hold;
    /// under [`ConflictPolicy::Yield`], a copy changed back once is left alone until it changes.
    pub fn gate(
        &self,
        owner: &Owner,
        (hash, policy): (Digest, ConflictPolicy),
        updates: &mut Vec<Update>,
        now: Instant,
    ) -> Gate {
        let mut state = self.lock();
        let State { mirrors, jitter } = &mut *state;
        if updates.is_empty() && !mirrors.contains_key(owner) {
            return Gate::default();
        }
        let copies = mirrors.entry(owner.clone()).or_default();
        settle(&mut copies.fights, updates, now);
        let mut held = Vec::new();
        let yielding = policy == ConflictPolicy::Yield;
        updates.retain(|u| {
            let due = match copies.fights.get_mut(&u.namespace) {
                Some(fight) => restoration(fight, (hash, yielding), u, now, jitter),
                None => {
                    let fight = Fight::start(hash, now);
                    copies.fights.insert(u.namespace.clone(), fight);
                    true
                }
            };
            if !due {
                held.push(u.namespace.clone());
            }
            due
        });
        copies.fights.retain(|_, f| !f.over(now));
        let mut gate = gate_of(copies, held, now);
        gate.warn = copies.report(owner, gate.contested.len(), now);
        if copies.fights.is_empty() {
            mirrors.remove(owner);
        }
        gate
    }

    /// Drops what is kept of a Mirror that is gone.
    pub fn forget(&self, owner: &Owner) {
        let gone = self.lock().mirrors.remove(owner);
        if let Some(gauge) = gone.and_then(|c| c.gauge) {
            gauge.set(0.0);
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Held copies that the plan no longer restores hold what skiff wants again (the other writer
/// gave in) or are gone: from `now` on they count as restored.
fn settle(fights: &mut BTreeMap<String, Fight>, updates: &[Update], now: Instant) {
    for (ns, fight) in fights.iter_mut() {
        if fight.restored.is_none() && !updates.iter().any(|u| &u.namespace == ns) {
            fight.restored = Some(now);
            fight.yielded = false;
        }
    }
}

/// Whether the restoration `update` asks for may be made at `now`, updating `fight`.
fn restoration(
    fight: &mut Fight,
    (hash, yielding): (Digest, bool),
    update: &Update,
    now: Instant,
    jitter: &mut Rng,
) -> bool {
    if fight.hash != hash {
        *fight = Fight::start(hash, now);
        return true;
    }
    match fight.restored {
        // Changed back since skiff restored it: one more undone restoration, unless it stayed
        // long enough to make this a new one-off edit.
        Some(at) => {
            if now.saturating_duration_since(at) >= QUIET {
                *fight = Fight::start(hash, now);
                return true;
            }
            fight.undone = fight.undone.saturating_add(1);
            fight.by = update.changed_by.or(fight.by);
            fight.restored = None;
            fight.yielded = yielding;
            fight.due = now;
            if !yielding {
                fight.due += random::jitter(step(fight.undone), 1.0, jitter);
            }
            false
        }
        None if fight.yielded => false,
        None if now >= fight.due => {
            fight.restored = Some(now);
            true
        }
        None => false,
    }
}

fn gate_of(copies: &Copies, held: Vec<String>, now: Instant) -> Gate {
    let mut gate = Gate {
        held,
        ..Gate::default()
    };
    for (ns, fight) in &copies.fights {
        if fight.contested() {
            gate.contested.push((ns.clone(), fight.by));
            gate.contested_unheld += u32::from(fight.restored.is_some());
        }
        gate.yielded |= fight.yielded;
        let wake = match fight.restored {
            None if fight.yielded => None,
            None => Some(fight.due),
            Some(at) if fight.contested() => Some(at + QUIET),
            Some(_) => None,
        };
        if let Some(wake) = wake {
            let after = wake.saturating_duration_since(now);
            gate.next = Some(gate.next.map_or(after, |n| n.min(after)));
        }
    }
    gate
}

#[cfg(test)]
mod tests;
