//! The table of the fault scenarios ([`crate::faults`], [`crate::far`]), skiff beside each
//! peer, with ratios, and the goals they are held to.

use std::fmt::Write as _;
use std::time::Duration;

use crate::far::FarFanout;
use crate::faults::{DeadConnections, Partition};
use crate::operator::{RENEW_DEADLINE, RETRY_PERIOD};
use crate::report::{Column, Row, Unit, row, secs, table, verdict};

/// What the fault scenarios measured for one operator.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    pub dead: DeadConnections,
    pub partition: Partition,
    pub far: FarFanout,
}

/// Lease duration of every operator in the comparison (client-go's default).
const LEASE_DURATION: Duration = Duration::from_secs(15);

pub fn render(out: &mut String, columns: &[Column]) {
    let cols: Vec<&Column> = columns.iter().filter(|c| c.faults.is_some()).collect();
    if cols.is_empty() {
        return;
    }
    let get = |f: &dyn Fn(&Faults) -> Option<f64>| -> Vec<Option<f64>> {
        cols.iter().map(|c| c.faults.as_ref().and_then(f)).collect()
    };
    let count = |n: usize| Some(n as f64);
    let rows: Vec<Row> = vec![
        row(
            "dead connections: fault → a new namespace's copy",
            Unit::Seconds,
            true,
            get(&|f| f.dead.new_namespace.map(secs)),
        ),
        row(
            "dead connections: fault → a source edit in every copy",
            Unit::Seconds,
            true,
            get(&|f| f.dead.source_edit.map(secs)),
        ),
        row(
            "dead connections: longest renew gap",
            Unit::Seconds,
            true,
            get(&|f| Some(secs(f.dead.max_renew_gap))),
        ),
        row(
            "dead connections: Lease lost (1) or kept (0)",
            Unit::Count,
            false,
            get(&|f| count(usize::from(f.dead.lease_lost))),
        ),
        row(
            "dead connections: leader exits (restarted at once)",
            Unit::Count,
            false,
            get(&|f| count(f.dead.exits)),
        ),
        row(
            "dead connections: connections opened after the fault",
            Unit::Count,
            false,
            get(&|f| count(f.dead.new_connections)),
        ),
        row(
            "dead connections: relists after the fault (LIST, or WatchList)",
            Unit::Count,
            false,
            get(&|f| count(f.dead.lists)),
        ),
        row(
            "partition 25 s: old leader's last renewal → it stopped",
            Unit::Seconds,
            true,
            get(&|f| f.partition.old_stopped.map(secs)),
        ),
        row(
            "partition 25 s: old leader's last renewal → the standby leads",
            Unit::Seconds,
            true,
            get(&|f| f.partition.standby_led.map(secs)),
        ),
        row(
            "partition 25 s: old leader's writes received after the standby led",
            Unit::Count,
            false,
            get(&|f| count(f.partition.late_writes)),
        ),
        row(
            "partition 25 s: its connections reset with writes held",
            Unit::Count,
            false,
            get(&|f| count(f.partition.resets)),
        ),
        row(
            "partition 25 s: its connections delivered late on heal",
            Unit::Count,
            false,
            get(&|f| count(f.partition.delivered_on_heal)),
        ),
        row(
            "10 ms link, QPS 500: 2,000 copies",
            Unit::Seconds,
            true,
            get(&|f| f.far.took.map(secs)),
        ),
        row(
            "10 ms link, QPS 500: CPU time",
            Unit::Seconds,
            true,
            get(&|f| Some(secs(f.far.cpu))),
        ),
        row(
            "10 ms link, QPS 500: connections opened",
            Unit::Count,
            false,
            get(&|f| count(f.far.connections)),
        ),
    ];
    let title = "When the network misbehaves (a fault proxy between each operator and the API \
                 server; a leader that exits is started again at once, as a kubelet would)";
    table(out, title, &cols, &rows);
    goals(out, &cols);
}

fn goals(out: &mut String, cols: &[&Column]) {
    let Some(skiff) = cols
        .iter()
        .find(|c| c.operator.is_skiff())
        .and_then(|c| c.faults.as_ref())
    else {
        return;
    };
    let peer_best = |f: &dyn Fn(&Faults) -> Option<Duration>| {
        cols.iter()
            .filter(|c| !c.operator.is_skiff())
            .filter_map(|c| c.faults.as_ref().and_then(f))
            .min()
    };
    let heard = skiff.dead.new_namespace.max(skiff.dead.source_edit);
    let _ = writeln!(
        out,
        "\n- Dead connections: the new namespace's copy and the source edit land ≤ 15 s after \
         the fault, the Lease is kept with a max renew gap ≤ 3.5 s, no relist: **{}** ({}, gap \
         {:.2} s, {} LISTs).",
        verdict(
            heard.is_some_and(|h| h <= Duration::from_secs(15))
                && !skiff.dead.lease_lost
                && skiff.dead.max_renew_gap <= RETRY_PERIOD + Duration::from_millis(1500)
                && skiff.dead.lists == 0
        ),
        heard.map_or("never".into(), |h| format!("{:.1} s", secs(h))),
        secs(skiff.dead.max_renew_gap),
        skiff.dead.lists
    );
    let p = &skiff.partition;
    let _ = writeln!(
        out,
        "- Partition: the old leader stops ≤ renew deadline after its last renewal, the \
         standby leads ≤ lease duration + retry period, 0 late writes: **{}** (stopped {}, led \
         {}, {} late writes, {} connections reset).",
        verdict(
            p.old_stopped
                .is_some_and(|d| d <= RENEW_DEADLINE + Duration::from_millis(500))
                && p.standby_led
                    .is_some_and(|d| d <= LEASE_DURATION + RETRY_PERIOD)
                && p.late_writes == 0
        ),
        p.old_stopped
            .map_or("never".into(), |d| format!("{:.1} s", secs(d))),
        p.standby_led
            .map_or("never".into(), |d| format!("{:.1} s", secs(d))),
        p.late_writes,
        p.resets
    );
    if let Some(took) = skiff.far.took {
        let peer = peer_best(&|f| f.far.took);
        let ratio = peer.map(|p| secs(p) / secs(took));
        let _ = writeln!(
            out,
            "- 10 ms link, QPS 500: 2,000 copies in ≤ 6 s and ≥ 10× faster than the peer: **{}** \
             ({:.1} s; the fastest peer {}).",
            verdict(took <= Duration::from_secs(6) && ratio.is_some_and(|r| r >= 10.0)),
            secs(took),
            match (peer, ratio) {
                (Some(p), Some(r)) => format!("{:.1} s, {r:.0}×", secs(p)),
                _ => "did not finish".into(),
            }
        );
    }
}
