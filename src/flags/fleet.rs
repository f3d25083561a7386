//! The fleet's flags: on a hub, `--fleet-hub` and what it places with; on a member,
//! `--hub-kubeconfig`, `--hub-name` and `--hub-kinds`, the member admin's terms for its hub.
//!
//! A member takes from its hub only the kinds `--hub-kinds` names (ConfigMaps unless its admin
//! names more), each of which it must copy at all (a kit kind in `--kinds`, Secrets under
//! `--secret-target-names`): whoever can place content on the hub reaches this cluster only
//! within what its own admin allows.

use super::FlagError;
use crate::kind::{EnabledBy, Kinds, SourceKind, names};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

/// A member cluster not heard from for this long is silent: three missed heartbeats.
pub const DEFAULT_MEMBER_SILENCE: Duration = Duration::from_secs(180);
/// The hub's Placement writes: a fleet of 1,000 members takes one edit in 4 s.
pub const DEFAULT_FLEET_QPS: f32 = 250.0;
pub const DEFAULT_FLEET_BURST: u32 = 500;
/// How often a member renews its heartbeat on the hub: one request a minute.
pub const DEFAULT_HUB_HEARTBEAT: Duration = Duration::from_secs(60);
/// The only kind a member takes from its hub unless its admin names more.
pub const DEFAULT_HUB_KINDS: &str = "configmaps";

/// `--fleet-hub` and its client: the hub's side.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetHub {
    pub member_silence_after: Duration,
    pub qps: f32,
    pub burst: u32,
}

/// `--hub-kubeconfig` and the member admin's terms: the member's side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubMember {
    pub kubeconfig: PathBuf,
    /// `--hub-name`: what every copy from this hub carries in `skiff.dev/hub`.
    pub name: String,
    /// `--hub-kinds`.
    pub kinds: BTreeSet<SourceKind>,
    /// `--hub-heartbeat-period`.
    pub heartbeat: Duration,
}

/// `--fleet-hub` with its settings, `None` when off.
pub(super) fn fleet_hub(
    on: bool,
    member_silence_after: Duration,
    (qps, burst): (f32, u32),
) -> Result<Option<FleetHub>, FlagError> {
    if !on {
        return Ok(None);
    }
    if member_silence_after < Duration::from_secs(1) {
        return Err(invalid(
            "--member-silence-after",
            "--member-silence-after must be at least 1s, and several of the members' \
             --hub-heartbeat-period (1m unless they set it), e.g. --member-silence-after=3m"
                .to_owned(),
        ));
    }
    Ok(Some(FleetHub {
        member_silence_after,
        qps,
        burst,
    }))
}

/// `--hub-kubeconfig`, `--hub-name`, `--hub-kinds` and `--hub-heartbeat-period`, `None`
/// without a hub kubeconfig.
pub(super) fn hub_member(
    (kubeconfig, name): (&str, &str),
    kinds: &str,
    heartbeat: Duration,
    enabled: &Kinds,
) -> Result<Option<HubMember>, FlagError> {
    if kubeconfig.is_empty() {
        if !name.is_empty() {
            return Err(invalid(
                "--hub-name",
                "--hub-name is set but --hub-kubeconfig is not: a member reads its hub through \
                 that kubeconfig; set both or neither"
                    .to_owned(),
            ));
        }
        return Ok(None);
    }
    if !valid_label_value(name) {
        return Err(invalid(
            "--hub-name",
            format!(
                "--hub-name {name:?} must name the hub as a label value (1-63 letters, digits, \
                 '-', '_' or '.', starting and ending with a letter or digit): every copy from \
                 the hub carries it in skiff.dev/hub, e.g. --hub-name=hub-eu"
            ),
        ));
    }
    if heartbeat < Duration::from_secs(1) {
        return Err(invalid(
            "--hub-heartbeat-period",
            "--hub-heartbeat-period must be at least 1s: each heartbeat is a request to the hub, \
             e.g. --hub-heartbeat-period=1m"
                .to_owned(),
        ));
    }
    Ok(Some(HubMember {
        kubeconfig: PathBuf::from(kubeconfig),
        name: name.to_owned(),
        kinds: hub_kinds(kinds, enabled)?,
        heartbeat,
    }))
}

/// `--hub-kinds`: each a kind this member copies at all.
fn hub_kinds(text: &str, enabled: &Kinds) -> Result<BTreeSet<SourceKind>, FlagError> {
    let mut kinds = BTreeSet::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let row = names::lookup("--hub-kinds", entry).map_err(|e| invalid("--hub-kinds", e))?;
        if !enabled.is_enabled(row.id) {
            let how = match row.enabled_by {
                EnabledBy::SecretTargetNames => "set --secret-target-names (with its RBAC)",
                EnabledBy::KindsFlag | EnabledBy::Always => "add it to --kinds (with its RBAC)",
            };
            return Err(invalid(
                "--hub-kinds",
                format!(
                    "--hub-kinds names {entry} but this skiff does not copy {}s: {how} or drop \
                     it here",
                    row.name
                ),
            ));
        }
        kinds.insert(row.id);
    }
    if kinds.is_empty() {
        return Err(invalid(
            "--hub-kinds",
            format!(
                "--hub-kinds is empty: the hub could place nothing; e.g. --hub-kinds={DEFAULT_HUB_KINDS}"
            ),
        ));
    }
    Ok(kinds)
}

/// A Kubernetes label value, not empty.
fn valid_label_value(value: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    (1..=63).contains(&value.len())
        && edge(value.chars().next())
        && edge(value.chars().last())
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

fn invalid(flag: &'static str, message: String) -> FlagError {
    FlagError::Invalid { flag, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(kubeconfig: &str, name: &str, kinds: &str) -> Result<Option<HubMember>, FlagError> {
        let enabled = Kinds::default().with_secret_targets(true);
        hub_member((kubeconfig, name), kinds, DEFAULT_HUB_HEARTBEAT, &enabled)
    }

    fn says(result: Result<Option<HubMember>, FlagError>, flag: &str, words: &str) {
        let error = result.expect_err("refused").to_string();
        assert!(error.contains(flag) && error.contains(words), "{error}");
    }

    #[test]
    fn a_member_takes_configmaps_unless_its_admin_names_more() {
        assert_eq!(member("", "", DEFAULT_HUB_KINDS), Ok(None));
        let on = member("/hub/kubeconfig", "hub-eu", DEFAULT_HUB_KINDS).expect("valid");
        let on = on.expect("a member");
        assert_eq!(on.kinds, BTreeSet::from([SourceKind::ConfigMap]));
        let more = member("/k", "hub-eu", "configmaps,secrets")
            .expect("valid")
            .expect("on");
        assert!(more.kinds.contains(&SourceKind::Secret));
    }

    #[test]
    fn a_kind_the_member_does_not_copy_or_a_bad_name_is_refused_naming_the_fix() {
        says(
            member("/k", "hub-eu", "limitranges"),
            "--hub-kinds",
            "--kinds",
        );
        says(
            member("/k", "hub-eu", "pods"),
            "--hub-kinds",
            "never copies",
        );
        says(member("/k", "", "configmaps"), "--hub-name", "label value");
        says(
            member("/k", "Hub EU", "configmaps"),
            "--hub-name",
            "label value",
        );
        says(
            member("", "hub-eu", "configmaps"),
            "--hub-name",
            "--hub-kubeconfig",
        );
        let none = Kinds::default();
        let secrets = hub_member(("/k", "hub-eu"), "secrets", DEFAULT_HUB_HEARTBEAT, &none);
        says(secrets, "--hub-kinds", "--secret-target-names");
        let enabled = Kinds::default();
        let hurried = hub_member(("/k", "hub-eu"), "configmaps", Duration::ZERO, &enabled);
        says(hurried, "--hub-heartbeat-period", "at least 1s");
    }

    #[test]
    fn a_hub_counts_silence_from_one_second() {
        assert_eq!(fleet_hub(false, Duration::ZERO, (1.0, 1)), Ok(None));
        assert!(fleet_hub(true, Duration::from_millis(10), (1.0, 1)).is_err());
        let hub = fleet_hub(true, DEFAULT_MEMBER_SILENCE, (250.0, 500)).expect("valid");
        assert_eq!(
            hub.map(|h| h.member_silence_after),
            Some(DEFAULT_MEMBER_SILENCE)
        );
    }
}
