//! The settings as one line of `flag=value` pairs, for the start-up log: what this replica
//! runs with, read where it ran (it holds no secrets: paths, names and numbers only).

use super::{FleetHub, HubMember, Settings, SourceNamespaces};
use crate::duration::format_duration;
use std::fmt;

impl fmt::Display for Settings {
    /// One line of `flag=value` pairs for the start-up log (holds no secrets).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let or = |value: &Option<String>, fallback: &str| {
            value.clone().unwrap_or_else(|| fallback.to_owned())
        };
        let kubeconfig = self.kubeconfig.as_ref().map(|p| p.display().to_string());
        let impersonate = &self.impersonate;
        let metrics = self.metrics_bind_address.map(|a| a.to_string());
        let cert_dir = self
            .metrics_cert_dir
            .as_ref()
            .map(|p| p.display().to_string());
        let sources = match &self.source_namespaces {
            SourceNamespaces::Own => "(own namespace)".to_owned(),
            SourceNamespaces::All => "*".to_owned(),
            SourceNamespaces::Only(list) => list.join(","),
        };
        let secret_targets = match self.secret_target_names.as_slice() {
            [] => "(none: Secret copies disabled)".to_owned(),
            names => names.join(","),
        };
        write!(
            f,
            "kubeconfig={} context={} as={} as-uid={} as-group={} kube-api-qps={} \
             kube-api-burst={} leader-elect={} \
             leader-election-id={} leader-election-namespace={} \
             leader-elect-lease-duration={} leader-elect-renew-deadline={} \
             leader-elect-retry-period={} leader-elect-release-on-cancel={} \
             leader-elect-pod-deletion-cost={} stop-on-pod-deletion={} \
             require-write-policy={} leader-elect-qps={} \
             leader-elect-burst={} health-probe-bind-address={} \
             metrics-bind-address={} metrics-secure={} metrics-cert-dir={} \
             graceful-shutdown-timeout={} watch-idle-timeout={} deafness-timeout={} \
             source-namespaces={} secret-target-names={} self-service={} kinds={} \
             bindable-roles={} binding-namespace-label={} fleet-hub={} hub={} log-format={} \
             log-level={}",
            or(&kubeconfig, "(auto)"),
            or(&self.context, "(current)"),
            or(&impersonate.user, "(kubeconfig)"),
            or(&impersonate.uid, "(kubeconfig)"),
            match impersonate.groups.as_slice() {
                [] => "(kubeconfig)".to_owned(),
                groups => groups.join(","),
            },
            self.kube_api_qps,
            self.kube_api_burst,
            self.leader_elect,
            self.leader_election_id,
            or(&self.leader_election_namespace, "(own namespace)"),
            format_duration(self.timing.lease_duration),
            format_duration(self.timing.renew_deadline),
            format_duration(self.timing.retry_period),
            self.release_on_cancel,
            self.pod_deletion_cost,
            self.stop_on_pod_deletion,
            self.require_write_policy,
            self.leader_elect_qps,
            self.leader_elect_burst,
            self.health_probe_bind_address,
            or(&metrics, "0 (disabled)"),
            self.metrics_secure,
            or(&cert_dir, "(self-signed)"),
            format_duration(self.graceful_shutdown_timeout),
            format_duration(self.hearing.watch_idle_timeout),
            self.hearing
                .deafness_timeout
                .map_or_else(|| "0 (off)".to_owned(), format_duration),
            sources,
            secret_targets,
            self.self_service.as_ref().map_or_else(
                || "false".to_owned(),
                |s| format!(
                    "true (max-copies-per-tenant-mirror={} self-service-kinds={} \
                     self-service-projections={} self-service-orphan={})",
                    s.max_copies,
                    s.kinds_flag(),
                    s.projections_flag(),
                    s.orphan
                )
            ),
            or_none(self.kinds.flagged().map(|k| k.flag_name()).collect()),
            or_none(self.kinds.bindable_roles().map(str::to_owned).collect()),
            self.kinds.binding_namespace_label().unwrap_or("(none)"),
            self.fleet_hub
                .as_ref()
                .map_or_else(|| "false".to_owned(), fleet_hub),
            self.hub
                .as_ref()
                .map_or_else(|| "(none)".to_owned(), hub_member),
            self.log_format,
            self.log_level.as_str().to_ascii_lowercase(),
        )
    }
}

/// `--fleet-hub` and what it places with.
fn fleet_hub(hub: &FleetHub) -> String {
    format!(
        "true (member-silence-after={} fleet-qps={} fleet-burst={})",
        format_duration(hub.member_silence_after),
        hub.qps,
        hub.burst
    )
}

/// `--hub-kubeconfig` and the member admin's terms.
fn hub_member(hub: &HubMember) -> String {
    let kinds: Vec<String> = hub.kinds.iter().map(|k| k.row().flag_name()).collect();
    format!(
        "{} (hub-name={} hub-kinds={} hub-heartbeat-period={})",
        hub.kubeconfig.display(),
        hub.name,
        kinds.join(","),
        format_duration(hub.heartbeat)
    )
}

/// A comma list, or `(none)`.
fn or_none(items: Vec<String>) -> String {
    if items.is_empty() {
        return "(none)".to_owned();
    }
    items.join(",")
}

#[cfg(test)]
mod tests {
    use super::super::testing::try_parse;

    #[test]
    fn the_start_up_line_names_a_hub_and_a_members_terms() {
        let hub = try_parse(&["--fleet-hub", "--member-silence-after=5m"]).expect("valid");
        let line = hub.to_string();
        assert!(
            line.contains("fleet-hub=true (member-silence-after=5m0s"),
            "{line}"
        );
        assert!(line.contains(" hub=(none) "), "{line}");
        let member = try_parse(&[
            "--hub-kubeconfig=/etc/skiff/hub/kubeconfig",
            "--hub-name=eu",
        ]);
        let line = member.expect("valid").to_string();
        let terms = "hub=/etc/skiff/hub/kubeconfig (hub-name=eu hub-kinds=configmaps \
                     hub-heartbeat-period=1m0s)";
        assert!(line.contains(terms), "{line}");
        assert!(line.contains("fleet-hub=false"), "{line}");
    }
}
