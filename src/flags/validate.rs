//! Flag validation: turns parsed options into [`Settings`], refusing values skiff cannot run with.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::num::NonZeroU32;
use std::path::PathBuf;

use super::{FlagError, Options, Settings, SourceNamespaces};
use crate::kind::Kinds;
use crate::leader::Timing;

fn invalid(flag: &'static str, message: String) -> FlagError {
    FlagError::Invalid { flag, message }
}

pub(super) fn settings(o: Options) -> Result<Settings, FlagError> {
    let timing = Timing::new(
        o.leader_elect_lease_duration,
        o.leader_elect_renew_deadline,
        o.leader_elect_retry_period,
    )
    .map_err(|e| invalid(e.flag, e.message))?;
    let kinds = Kinds::parse(&o.kinds, &o.bindable_roles)
        .map_err(|e| invalid("--kinds", e))?
        .with_binding_namespace_label(&o.binding_namespace_label)
        .map_err(|e| invalid("--binding-namespace-label", e))?;
    let secret_target_names = secret_target_names(&o.secret_target_names)?;
    let kinds = kinds.with_secret_targets(!secret_target_names.is_empty());
    Ok(Settings {
        kubeconfig: non_empty(o.kubeconfig).map(PathBuf::from),
        context: non_empty(o.context),
        impersonate: crate::kube::impersonate::Overrides {
            user: non_empty(o.act_as),
            uid: non_empty(o.as_uid),
            groups: o.as_group,
        },
        kube_api_qps: qps("--kube-api-qps", o.kube_api_qps)?,
        kube_api_burst: burst("--kube-api-burst", o.kube_api_burst)?,
        leader_elect: o.leader_elect,
        leader_election_id: name("--leader-election-id", o.leader_election_id, 253)?,
        leader_election_namespace: match non_empty(o.leader_election_namespace) {
            Some(ns) => Some(name("--leader-election-namespace", ns, 63)?),
            None => None,
        },
        timing,
        release_on_cancel: o.leader_elect_release_on_cancel,
        pod_deletion_cost: o.leader_elect_pod_deletion_cost,
        stop_on_pod_deletion: o.stop_on_pod_deletion,
        require_write_policy: o.require_write_policy,
        leader_elect_qps: qps("--leader-elect-qps", o.leader_elect_qps)?,
        leader_elect_burst: burst("--leader-elect-burst", o.leader_elect_burst)?,
        health_probe_bind_address: bind_address(
            "--health-probe-bind-address",
            &o.health_probe_bind_address,
        )?,
        metrics_bind_address: match o.metrics_bind_address.as_str() {
            "0" => None,
            text => Some(bind_address("--metrics-bind-address", text)?),
        },
        metrics_secure: o.metrics_secure,
        metrics_cert_dir: metrics_cert_dir(o.metrics_secure, o.metrics_cert_dir)?,
        graceful_shutdown_timeout: o.graceful_shutdown_timeout,
        hearing: super::hearing::hearing(o.watch_idle_timeout, o.deafness_timeout)?,
        source_namespaces: source_namespaces(&o.source_namespaces)?,
        self_service: super::self_service::self_service(
            o.self_service,
            &o.offer_namespace_selector,
            o.max_copies_per_tenant_mirror,
            super::self_service::Shared {
                kinds: &o.self_service_kinds,
                projections: &o.self_service_projections,
                orphan: o.self_service_orphan,
            },
            &kinds,
        )?,
        fleet_hub: super::fleet::fleet_hub(
            o.fleet_hub,
            o.member_silence_after,
            (
                qps("--fleet-qps", o.fleet_qps)?,
                burst("--fleet-burst", o.fleet_burst)?.get(),
            ),
        )?,
        hub: super::fleet::hub_member(
            (&o.hub_kubeconfig, &o.hub_name),
            &o.hub_kinds,
            o.hub_heartbeat_period,
            &kinds,
        )?,
        secret_target_names,
        kinds,
        log_format: o.log_format,
        log_level: o.log_level,
    })
}

fn non_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

fn qps(flag: &'static str, value: f32) -> Result<f32, FlagError> {
    if value.is_finite() && value > 0.0 {
        return Ok(value);
    }
    Err(invalid(
        flag,
        format!("{flag} must be a number greater than 0 (got {value}); e.g. {flag}=20"),
    ))
}

fn burst(flag: &'static str, value: u32) -> Result<NonZeroU32, FlagError> {
    NonZeroU32::new(value).ok_or_else(|| {
        invalid(
            flag,
            format!("{flag} must be at least 1 (got 0); e.g. {flag}=10"),
        )
    })
}

/// A DNS-1123 name (lowercase letters, digits, `-` and `.`), as Lease names and namespaces are.
fn name(flag: &'static str, value: String, max_len: usize) -> Result<String, FlagError> {
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.';
    let edges_ok =
        |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let dots_ok = max_len > 63 || !value.contains('.');
    if value.len() <= max_len
        && value.chars().all(allowed)
        && dots_ok
        && edges_ok(value.chars().next())
        && edges_ok(value.chars().last())
    {
        return Ok(value);
    }
    Err(invalid(
        flag,
        format!(
            "{flag} {value:?} is not a valid Kubernetes name (lowercase letters, digits and '-', \
             starting and ending with a letter or digit, at most {max_len} characters)"
        ),
    ))
}

/// `:8081` (all interfaces), `127.0.0.1:8081`, `[::1]:8081`.
fn bind_address(flag: &'static str, text: &str) -> Result<SocketAddr, FlagError> {
    let parsed = match text.strip_prefix(':') {
        Some(port) => port
            .parse::<u16>()
            .ok()
            .map(|port| SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port)),
        None => text.parse::<SocketAddr>().ok(),
    };
    parsed.ok_or_else(|| {
        invalid(
            flag,
            format!(
                "{flag} {text:?} is not an address; use :PORT (all interfaces), \
                 IP:PORT or [IPv6]:PORT, e.g. {flag}=:8081"
            ),
        )
    })
}

/// A certificate only makes sense for HTTPS; saying both is a contradiction, not a preference.
fn metrics_cert_dir(secure: bool, dir: String) -> Result<Option<PathBuf>, FlagError> {
    const FLAG: &str = "--metrics-cert-dir";
    match non_empty(dir) {
        Some(dir) if !secure => Err(invalid(
            FLAG,
            format!(
                "{FLAG} {dir:?} is given but --metrics-secure=false serves plain HTTP; \
                 drop one of the two"
            ),
        )),
        dir => Ok(dir.map(PathBuf::from)),
    }
}

fn source_namespaces(text: &str) -> Result<SourceNamespaces, FlagError> {
    const FLAG: &str = "--source-namespaces";
    match text.trim() {
        "" => return Ok(SourceNamespaces::Own),
        "*" => return Ok(SourceNamespaces::All),
        _ => {}
    }
    let mut list = Vec::new();
    for entry in text.split(',').map(str::trim) {
        if entry == "*" || entry.is_empty() {
            return Err(invalid(
                FLAG,
                format!("{FLAG} {text:?}: give `*` alone or a comma list of namespaces, e.g. a,b"),
            ));
        }
        list.push(name(FLAG, entry.to_owned(), 63)?);
    }
    list.sort();
    list.dedup();
    Ok(SourceNamespaces::Only(list))
}

/// Secret names (DNS-1123 subdomains), as RBAC `resourceNames` lists them.
fn secret_target_names(text: &str) -> Result<Vec<String>, FlagError> {
    const FLAG: &str = "--secret-target-names";
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut names = Vec::new();
    for entry in text.split(',').map(str::trim) {
        if entry.is_empty() || entry == "*" {
            return Err(invalid(
                FLAG,
                format!(
                    "{FLAG} {text:?}: give a comma list of Secret names, e.g. app-tls,registry-pull \
                     (no wildcard: each name must also be in the secret-targets ClusterRole's \
                     resourceNames)"
                ),
            ));
        }
        names.push(name(FLAG, entry.to_owned(), 253)?);
    }
    names.sort();
    names.dedup();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{addr, try_parse};
    use super::*;

    fn rejected_flag(args: &[&str]) -> (&'static str, String) {
        match try_parse(args) {
            Err(FlagError::Invalid { flag, message }) => (flag, message),
            other => panic!("{args:?} should be invalid, got {other:?}"),
        }
    }

    #[test]
    fn renew_deadline_must_be_shorter_than_lease_duration() {
        let (flag, message) = rejected_flag(&["--leader-elect-renew-deadline=15s"]);
        assert_eq!(flag, "--leader-elect-renew-deadline");
        assert_eq!(
            message,
            "--leader-elect-renew-deadline (15s) must be shorter than \
             --leader-elect-lease-duration (15s), so the leader stops before another may take over"
        );
    }

    #[test]
    fn renew_deadline_must_exceed_jittered_retry_period() {
        let args = [
            "--leader-elect-renew-deadline=2400ms",
            "--leader-elect-retry-period=2s",
        ];
        assert_eq!(rejected_flag(&args).0, "--leader-elect-renew-deadline");
        let just_enough = [
            "--leader-elect-renew-deadline=2401ms",
            "--leader-elect-retry-period=2s",
        ];
        assert!(try_parse(&just_enough).is_ok());
    }

    #[test]
    fn lease_duration_must_fit_the_leases_seconds_field() {
        let (flag, message) = rejected_flag(&["--leader-elect-lease-duration=1000000h"]);
        assert_eq!(flag, "--leader-elect-lease-duration");
        assert!(message.contains("leaseDurationSeconds"), "{message}");
    }

    #[test]
    fn retry_period_must_be_positive() {
        let (flag, _) = rejected_flag(&["--leader-elect-retry-period=0"]);
        assert_eq!(flag, "--leader-elect-retry-period");
    }

    #[test]
    fn qps_must_be_positive_for_both_clients() {
        for flag in ["--kube-api-qps", "--leader-elect-qps"] {
            assert_eq!(rejected_flag(&[flag, "0"]).0, flag);
            assert_eq!(rejected_flag(&[flag, "-1"]).0, flag);
            assert_eq!(rejected_flag(&[flag, "NaN"]).0, flag);
        }
    }

    #[test]
    fn burst_must_be_at_least_one_for_both_clients() {
        for flag in ["--kube-api-burst", "--leader-elect-burst"] {
            let (named, message) = rejected_flag(&[flag, "0"]);
            assert_eq!(named, flag);
            assert!(message.contains("at least 1"), "{message}");
        }
    }

    #[test]
    fn bind_addresses_accept_port_only_ipv4_and_bracketed_ipv6() {
        let s = try_parse(&[
            "--health-probe-bind-address=[::1]:9",
            "--metrics-bind-address",
            "127.0.0.1:7",
        ])
        .expect("valid addresses");
        assert_eq!(s.health_probe_bind_address, addr("[::1]:9"));
        assert_eq!(s.metrics_bind_address, Some(addr("127.0.0.1:7")));
        let s = try_parse(&["--health-probe-bind-address=:9"]).expect("valid");
        assert_eq!(s.health_probe_bind_address, addr("0.0.0.0:9"));
    }

    #[test]
    fn malformed_bind_addresses_name_the_flag() {
        for bad in ["8081", ":http", "localhost:80", "::1:80", ":70000"] {
            let (flag, _) = rejected_flag(&["--health-probe-bind-address", bad]);
            assert_eq!(flag, "--health-probe-bind-address", "{bad}");
        }
        assert_eq!(
            rejected_flag(&["--metrics-bind-address=x"]).0,
            "--metrics-bind-address"
        );
    }

    #[test]
    fn metrics_address_zero_disables_metrics() {
        let s = try_parse(&["--metrics-bind-address=0"]).expect("valid");
        assert_eq!(s.metrics_bind_address, None);
    }

    #[test]
    fn metrics_secure_is_a_boolean_and_a_cert_dir_needs_it() {
        for (args, secure) in [
            (&["--metrics-secure=false"][..], false),
            (&["--metrics-secure", "false"][..], false),
            (&["--metrics-secure"][..], true),
            (&[][..], true),
        ] {
            assert_eq!(try_parse(args).expect("valid").metrics_secure, secure);
        }
        let s = try_parse(&["--metrics-cert-dir=/certs"]).expect("valid");
        assert_eq!(s.metrics_cert_dir, Some(PathBuf::from("/certs")));
        let (flag, message) = rejected_flag(&["--metrics-secure=false", "--metrics-cert-dir=/c"]);
        assert_eq!(flag, "--metrics-cert-dir");
        assert!(message.contains("--metrics-secure=false"), "{message}");
        assert!(try_parse(&["--metrics-secure=maybe"]).is_err());
    }

    #[test]
    fn source_namespaces_take_a_list_or_star() {
        let s = try_parse(&["--source-namespaces=b, a,b"]).expect("valid");
        assert_eq!(
            s.source_namespaces,
            SourceNamespaces::Only(vec!["a".into(), "b".into()])
        );
        let s = try_parse(&["--source-namespaces=*"]).expect("valid");
        assert_eq!(s.source_namespaces, SourceNamespaces::All);
        for bad in ["a,,b", "a,*", "Bad_NS"] {
            assert_eq!(
                rejected_flag(&["--source-namespaces", bad]).0,
                "--source-namespaces"
            );
        }
    }

    #[test]
    fn secret_target_names_take_a_list_of_secret_names() {
        let s = try_parse(&["--secret-target-names=b.example, app-tls,b.example"]).expect("valid");
        assert_eq!(s.secret_target_names, ["app-tls", "b.example"]);
        assert!(
            try_parse(&["--secret-target-names="])
                .expect("valid")
                .secret_target_names
                .is_empty()
        );
        for bad in ["a,,b", "*", "a,*", "App_TLS"] {
            let (flag, message) = rejected_flag(&["--secret-target-names", bad]);
            assert_eq!(flag, "--secret-target-names", "{bad}");
            assert!(message.contains(bad), "{bad}: {message}");
        }
    }

    #[test]
    fn kinds_enable_kit_kinds_and_refuse_denied_ones_at_start() {
        let s = try_parse(&[]).expect("valid");
        assert_eq!(s.kinds.flagged().count(), 0, "none by default");
        let label = "--binding-namespace-label=skiff.dev/kit";
        let s = try_parse(&["--kinds=limitranges", "--kinds", "resourcequotas", label]);
        assert_eq!(s.expect("valid").kinds.flagged().count(), 2);
        let (flag, _) = rejected_flag(&["--kinds=limitranges"]);
        assert_eq!(
            flag, "--binding-namespace-label",
            "every kit kind's copies need the label"
        );
        let (flag, message) = rejected_flag(&["--kinds=deployments.apps"]);
        assert_eq!(flag, "--kinds");
        assert!(message.contains("deployments.apps"), "{message}");
        let (_, message) = rejected_flag(&["--kinds=rolebindings"]);
        assert!(message.contains("--bindable-roles"), "{message}");
        let binds = ["--kinds=rolebindings", "--bindable-roles=edit"];
        let (flag, message) = rejected_flag(&binds);
        assert_eq!(flag, "--binding-namespace-label", "{message}");
        let (flag, _) = rejected_flag(&["--binding-namespace-label=skiff.dev/kit"]);
        assert_eq!(flag, "--binding-namespace-label");
        let s = try_parse(&[
            binds[0],
            binds[1],
            "--binding-namespace-label=skiff.dev/kit",
        ]);
        let s = s.expect("valid");
        assert_eq!(s.kinds.binding_namespace_label(), Some("skiff.dev/kit"));
    }

    #[test]
    fn lease_name_and_namespace_must_be_kubernetes_names() {
        assert_eq!(
            rejected_flag(&["--leader-election-id=My_Lease"]).0,
            "--leader-election-id"
        );
        assert!(try_parse(&["--leader-election-id=skiff.example.com"]).is_ok());
        let flag = "--leader-election-namespace";
        assert_eq!(rejected_flag(&[flag, "a.b"]).0, flag);
        assert_eq!(rejected_flag(&[flag, "-a"]).0, flag);
        let s = try_parse(&[flag, "skiff-system"]).expect("valid");
        assert_eq!(s.leader_election_namespace.as_deref(), Some("skiff-system"));
    }
}
