//! The hub's metrics by member cluster (`cluster`: the member's namespace on the hub), for
//! alerts that name the cluster: when the hub last heard each member, and the Placement writes
//! it made for each.
//!
//! A member cut off cannot say so; `time() - skiff_fleet_member_heartbeat_timestamp_seconds >
//! 180` names the clusters the hub has not heard from, as the Mirror's `Silent` column counts
//! them.

use crate::metrics;
use std::time::SystemTime;

const HEARD: &str = "skiff_fleet_member_heartbeat_timestamp_seconds";
const HEARD_HELP: &str = "Unix time the hub last heard a member cluster's heartbeat.";
const WRITES: &str = "skiff_fleet_placement_writes_total";
const WRITES_HELP: &str =
    "Placements the hub created, replaced or withdrew in a member cluster's namespace.";

/// Lists the heartbeat gauge on `/metrics` before any member is heard from.
pub fn declare() {
    metrics::declare_gauge(HEARD, HEARD_HELP);
}

/// The hub heard the member of namespace `cluster` now.
pub fn heard(cluster: &str) {
    let gauge = metrics::gauge(HEARD, HEARD_HELP, &[("cluster", cluster)]);
    gauge.set(crate::time::unix_seconds(SystemTime::now()));
}

/// The hub wrote a Placement in the namespace of member `cluster`.
pub fn placement_written(cluster: &str) {
    metrics::counter(WRITES, WRITES_HELP, &[("cluster", cluster)]).inc();
}
