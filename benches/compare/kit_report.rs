//! The kit part's section of BENCHMARKS.md: the table beside the peer, skiff's requests by
//! method and code, and the goals: time ≤ 1.1 × (requests ÷ QPS), and a restart that writes nothing.

use std::fmt::Write as _;

use crate::kit::{Kitted, qps};
use crate::kit_count::listed;
use crate::report::{Unit, row, secs, table_of, verdict};
use crate::settings::Settings;

/// How far above the bucket's pace the kit may take (the goal: ≤ 1.1 × requests ÷ QPS).
const PACE_GOAL: f64 = 1.1;

/// The section; empty when the part did not run.
pub fn render(all: &[Kitted], settings: &Settings) -> String {
    let mut out = String::new();
    let Some(first) = all.first() else {
        return out;
    };
    // Run alone, the part is `make compare-kit`.
    let command = if settings.kit_only() {
        crate::command().replace("COMPARE_PARTS=kit make compare", "make compare-kit")
    } else {
        crate::command()
    };
    let n = first.namespaces;
    let kyverno = if all.iter().any(|k| k.label == crate::kyverno::LABEL) {
        crate::kyverno::described()
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "One run of `{}` on {}, {}: the namespace kit of `examples/namespace-kit.yaml` (a \
         NetworkPolicy, a LimitRange, a ResourceQuota, a RoleBinding to `edit`) into {n} new \
         namespaces, each operator after the other on one real control plane at QPS {} / \
         burst {}. skiff: `--kinds` for the four kinds, `--bindable-roles=edit`, a Mirror per \
         object; the peer: `--kit`, a reconciler per kind. Requests are counted from the \
         operator's own client metrics (`rest_client_requests_total`, scraped before the first \
         namespace and when the last object is seen; the Lease's from skiff's `leader-election` client, \
         the peer's from the audit log) and, as a check, from the API server's audit log. In \
         brackets: the ratio to skiff.{}",
        command,
        crate::machine(),
        crate::shell("date -u '+%Y-%m-%d %H:%M UTC'"),
        crate::operator::QPS,
        crate::operator::BURST,
        kyverno,
    );
    let get = |f: &dyn Fn(&Kitted) -> f64| -> Vec<Option<f64>> {
        all.iter().map(|k| Some(f(k))).collect()
    };
    let rows = [
        row(
            &format!("first namespace → last of the {} objects", 4 * n),
            Unit::Seconds,
            true,
            get(&|k| secs(k.took)),
        ),
        row(
            "requests in that window (its client metrics)",
            Unit::Count,
            true,
            all.iter()
                .map(|k| (!k.audit_only).then_some(k.requests))
                .collect(),
        ),
        row(
            "of them to the Lease",
            Unit::Count,
            false,
            get(&|k| k.lease),
        ),
        row(
            "requests in that window (audit log)",
            Unit::Count,
            true,
            get(&|k| k.audited as f64),
        ),
        row(
            &format!("requests (the Lease's aside) ÷ QPS {}", qps()),
            Unit::Seconds,
            true,
            get(&Kitted::paced),
        ),
        row(
            "time ÷ (requests ÷ QPS) (goal ≤ 1.1)",
            Unit::Ratio,
            false,
            get(&|k| secs(k.took) / k.paced()),
        ),
        row(
            "restart with the kit converged: objects changed",
            Unit::Count,
            false,
            get(&|k| k.restart_changed as f64),
        ),
        row(
            "restart: writes of kit objects (audit log)",
            Unit::Count,
            false,
            get(&|k| k.restart_kit_writes as f64),
        ),
        row(
            "restart: all writes, the Lease aside (audit log)",
            Unit::Count,
            false,
            get(&|k| k.restart_writes as f64),
        ),
        row(
            &format!("VmRSS, {} objects converged", 4 * n),
            Unit::Mib,
            true,
            get(&|k| k.converged.vm_rss as f64),
        ),
        row(
            "RssAnon, converged",
            Unit::Mib,
            true,
            get(&|k| k.converged.rss_anon as f64),
        ),
        row(
            "RssFile, converged",
            Unit::Mib,
            true,
            get(&|k| k.converged.rss_file as f64),
        ),
        row(
            "VmHWM (peak VmRSS)",
            Unit::Mib,
            true,
            get(&|k| k.peak_kib as f64),
        ),
        row(
            "load average (1 min) when the last object was seen",
            Unit::Ratio,
            false,
            get(&|k| k.load),
        ),
    ];
    let labels: Vec<&str> = all.iter().map(|k| k.label).collect();
    let title = format!("The namespace kit into {n} new namespaces");
    table_of(&mut out, &title, &labels, &rows);
    methods(&mut out, all);
    goals(&mut out, all);
    out
}

/// skiff's main-client requests in the window by method and status code, and every
/// operator's by verb and resource (audit log).
fn methods(out: &mut String, all: &[Kitted]) {
    let _ = writeln!(out);
    for k in all.iter().filter(|k| !k.by_method.is_empty()) {
        let _ = writeln!(
            out,
            "- {}'s main-client requests in the window, by method and status code: {}.",
            k.label,
            listed(&k.by_method)
        );
    }
    for k in all {
        let _ = writeln!(
            out,
            "- {}'s requests in the window by verb and resource (audit log): {}.",
            k.label,
            listed(&k.audited_by)
        );
    }
    for note in all.iter().flat_map(|k| &k.notes) {
        let _ = writeln!(out, "- {note}");
    }
}

fn goals(out: &mut String, all: &[Kitted]) {
    let Some(skiff) = all.iter().find(|k| k.label == "skiff") else {
        return;
    };
    let ratio = secs(skiff.took) / skiff.paced();
    let _ = writeln!(
        out,
        "\n- The kit into {} new namespaces ≤ 1.1 × (every request ÷ QPS): **{}** ({:.1} s for \
         {:.0} requests, {:.0} of them to the Lease on its own bucket; {:.0} ÷ {} = {:.1} s; \
         {ratio:.2}×).",
        skiff.namespaces,
        verdict(ratio <= PACE_GOAL),
        secs(skiff.took),
        skiff.requests,
        skiff.lease,
        skiff.requests - skiff.lease,
        qps(),
        skiff.paced(),
    );
    let _ = writeln!(
        out,
        "- A restart with the kit converged writes nothing: **{}** ({} objects changed, {} \
         writes of kit objects; every write, the Lease aside: {}, {}).",
        verdict(skiff.restart_changed == 0 && skiff.restart_kit_writes == 0),
        skiff.restart_changed,
        skiff.restart_kit_writes,
        skiff.restart_writes,
        listed(&skiff.restart_writes_by),
    );
}
