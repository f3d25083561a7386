use super::testing::{addr, try_parse};
use super::*;
use crate::kind::SourceKind;
use crate::testing::secs;

#[test]
fn defaults_match_the_flag_contract() {
    let s = try_parse(&[]).expect("defaults are valid");
    assert_eq!(s.kubeconfig, None);
    assert_eq!(s.context, None);
    assert_eq!(s.impersonate, Overrides::default());
    assert_eq!((s.kube_api_qps, s.kube_api_burst.get()), (20.0, 30));
    assert!(!s.leader_elect);
    assert_eq!(s.leader_election_id, "skiff-leader");
    assert_eq!(s.leader_election_namespace, None);
    assert_eq!(
        (
            s.timing.lease_duration,
            s.timing.renew_deadline,
            s.timing.retry_period
        ),
        (secs(15), secs(10), secs(2))
    );
    assert!(s.release_on_cancel);
    assert!(!s.require_write_policy);
    assert_eq!((s.leader_elect_qps, s.leader_elect_burst.get()), (5.0, 10));
    assert_eq!(s.health_probe_bind_address, addr("0.0.0.0:8081"));
    assert_eq!(s.metrics_bind_address, Some(addr("0.0.0.0:8443")));
    assert!(s.metrics_secure);
    assert_eq!(s.metrics_cert_dir, None);
    assert_eq!(s.graceful_shutdown_timeout, secs(30));
    assert_eq!(s.hearing.watch_idle_timeout, secs(70));
    assert_eq!(s.hearing.deafness_timeout, Some(secs(90)));
    assert_eq!(s.source_namespaces, SourceNamespaces::Own);
    assert!(s.secret_target_names.is_empty());
    assert_eq!(
        (s.log_format, s.log_level),
        (LogFormat::Text, LevelFilter::Info)
    );
}

#[test]
fn every_flag_takes_both_value_forms() {
    let s = try_parse(&[
        "--kubeconfig=/k",
        "--context",
        "kind",
        "--as=jane",
        "--as-uid",
        "1234",
        "--as-group=devs",
        "--as-group",
        "ops",
        "--kube-api-qps=50.5",
        "--kube-api-burst",
        "60",
        "--leader-elect",
        "--leader-election-id=lock",
        "--leader-election-namespace",
        "ops",
        "--leader-elect-lease-duration=1m",
        "--leader-elect-renew-deadline",
        "40s",
        "--leader-elect-retry-period=500ms",
        "--leader-elect-qps=7",
        "--leader-elect-burst",
        "3",
        "--graceful-shutdown-timeout=1m30s",
        "--watch-idle-timeout=2m",
        "--deafness-timeout",
        "3m",
        "--require-write-policy",
        "--log-format=json",
        "--log-level",
        "debug",
    ])
    .expect("valid flags");
    assert_eq!(s.kubeconfig, Some(PathBuf::from("/k")));
    assert_eq!(s.context.as_deref(), Some("kind"));
    let impersonate = Overrides {
        user: Some("jane".into()),
        uid: Some("1234".into()),
        groups: vec!["devs".into(), "ops".into()],
    };
    assert_eq!(s.impersonate, impersonate);
    assert_eq!((s.kube_api_qps, s.kube_api_burst.get()), (50.5, 60));
    assert!(s.leader_elect);
    assert_eq!(s.leader_election_id, "lock");
    assert_eq!(
        (
            s.timing.lease_duration,
            s.timing.renew_deadline,
            s.timing.retry_period
        ),
        (secs(60), secs(40), Duration::from_millis(500))
    );
    assert_eq!((s.leader_elect_qps, s.leader_elect_burst.get()), (7.0, 3));
    assert_eq!(s.graceful_shutdown_timeout, secs(90));
    assert_eq!(s.hearing.watch_idle_timeout, secs(120));
    assert_eq!(s.hearing.deafness_timeout, Some(secs(180)));
    assert!(s.require_write_policy);
    assert_eq!(
        (s.log_format, s.log_level),
        (LogFormat::Json, LevelFilter::Debug)
    );
}

#[test]
fn leader_elect_can_be_switched_off_explicitly() {
    assert!(
        !try_parse(&["--leader-elect=false"])
            .expect("valid")
            .leader_elect
    );
    assert!(
        try_parse(&["--leader-elect=true"])
            .expect("valid")
            .leader_elect
    );
}

#[test]
fn release_on_cancel_can_be_switched_off() {
    let flag = "--leader-elect-release-on-cancel";
    assert!(
        !try_parse(&["--leader-elect-release-on-cancel=false"])
            .expect("ok")
            .release_on_cancel
    );
    assert!(!try_parse(&[flag, "false"]).expect("ok").release_on_cancel);
    assert!(try_parse(&[flag]).expect("ok").release_on_cancel);
}

#[test]
fn a_bad_duration_names_the_flag_and_shows_an_example() {
    let err = try_parse(&["--leader-elect-lease-duration=15"]).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, FlagError::Usage(_)), "{err:?}");
    assert!(text.contains("--leader-elect-lease-duration"), "{text}");
    assert!(text.contains("1m30s"), "{text}");
}

#[test]
fn unknown_flags_and_bad_choices_are_usage_errors() {
    let err = try_parse(&["--leader-elect-lease=15s"]).unwrap_err();
    assert!(
        matches!(&err, FlagError::Usage(t) if t.contains("--leader-elect-lease")),
        "{err:?}"
    );
    let err = try_parse(&["--log-format=yaml"]).unwrap_err();
    assert!(err.to_string().contains("--log-format"), "{err}");
    let err = try_parse(&["--kube-api-burst=-1"]).unwrap_err();
    assert!(err.to_string().contains("--kube-api-burst"), "{err}");
    assert!(matches!(try_parse(&["stray"]), Err(FlagError::Usage(_))));
}

#[test]
fn help_is_an_early_exit_listing_every_flag() {
    let Err(FlagError::Help(text)) = try_parse(&["--help"]) else {
        panic!("--help should be FlagError::Help");
    };
    for flag in [
        "--kubeconfig",
        "--leader-elect-release-on-cancel",
        "--source-namespaces",
        "--metrics-secure",
        "--metrics-cert-dir",
        "--version",
        "--secret-target-names",
        "--watch-idle-timeout",
        "--deafness-timeout",
    ] {
        assert!(text.contains(flag), "help lacks {flag}: {text}");
    }
}

#[test]
fn version_is_an_early_exit_even_with_other_flags() {
    let err = try_parse(&["--metrics-bind-address=0", "--version"]).unwrap_err();
    assert_eq!(err, FlagError::Version);
    assert_eq!(err.to_string(), crate::version::describe());
}

#[test]
fn settings_display_names_flags_without_secrets_to_hide() {
    let line = try_parse(&["--metrics-bind-address=0"])
        .expect("valid")
        .to_string();
    assert!(line.contains("leader-elect-lease-duration=15s"), "{line}");
    assert!(line.contains("metrics-bind-address=0 (disabled)"), "{line}");
}

#[test]
fn tenants_publish_and_orphan_only_as_the_admin_flags_say() {
    let on = ["--self-service", "--secret-target-names=app-tls"];
    let s = try_parse(&on).expect("valid");
    let shared = s.self_service.as_ref().expect("on");
    assert!(
        shared.projections.is_empty() && !shared.orphan,
        "off by default"
    );
    let flags = [
        &on[..],
        &[
            "--self-service-projections=secrets-as-configmaps",
            "--self-service-orphan",
        ],
    ]
    .concat();
    let s = try_parse(&flags).expect("valid");
    let shared = s.self_service.as_ref().expect("on");
    assert!(shared.shares_as(SourceKind::Secret, SourceKind::ConfigMap));
    assert!(!shared.shares(SourceKind::Secret) && shared.orphan);
    let line = s.to_string();
    assert!(
        line.contains("self-service-projections=secrets-as-configmaps self-service-orphan=true"),
        "{line}"
    );
    for (bad, says) in [
        (
            "--self-service-projections=configmaps-as-secrets",
            "secrets-as-configmaps",
        ),
        ("--self-service-projections=secrets", "not a projection"),
    ] {
        let e = try_parse(&[&on[..], &[bad]].concat())
            .expect_err(bad)
            .to_string();
        assert!(
            e.contains("--self-service-projections") && e.contains(says),
            "{e}"
        );
    }
    let off = [
        "--self-service",
        "--self-service-projections=secrets-as-configmaps",
    ];
    let e = try_parse(&off).expect_err("Secrets not read").to_string();
    assert!(e.contains("--secret-target-names"), "{e}");
}
