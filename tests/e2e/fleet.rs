//! e2e: a fleet of real control planes (a hub and two members) and what a member's identity on
//! the hub may do.
//!
//! Why: members pull from the hub with a token the hub admin issued, and that token is what a
//! thief gets from a member cluster. It must read only its own member's share of the hub (403
//! elsewhere), write only its own reports, and be no credential on any member cluster. Only a
//! real authorizer, asked with the member's own token, shows that.

use crate::support::control_plane::require_e2e_binaries;
use crate::support::fleet::{Admission, Fleet, HEARTBEAT_LABEL, HEARTBEAT_LEASE, Placement};
use crate::support::kubectl::https_get;
use serde_json::json;
use skiff::kube::api::{Lease, Namespace, Secret};
use skiff::kube::{Client, Error, ListParams};

/// The Placement and Secret the hub places for each member.
const PLACED: &str = "skiff-system.app-ca";
const CARRIER: &str = "app-tls";

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_member_token_reads_its_own_share_of_the_hub_and_nothing_of_another_members() {
    require_e2e_binaries();
    let fleet = Fleet::start(2);
    let eu = fleet.admit("eu-1", &[("region", "eu")]);
    let us = fleet.admit("us-1", &[("region", "us")]);
    for member in [&eu, &us] {
        let spec = json!({"format": 1, "mirror": {"namespace": "skiff-system", "name": "app-ca"},
            "kind": "ConfigMap", "targetName": "app-ca", "hash": "h",
            "content": {"data": {"ca.crt": format!("PEM for {}", member.cluster)}}});
        let data = json!({"tls.crt": "Y2VydA==", "tls.key": "a2V5"});
        fleet.place(member, PLACED, spec, (CARRIER, data));
    }
    assert_eq!(
        eu.whoami(),
        "system:serviceaccount:eu-1:skiff-member",
        "the kubeconfig the member is handed authenticates as its own ServiceAccount"
    );

    let hub = eu.client();
    reads_and_reports_in_its_own_namespace(&hub, &eu);
    let (key, value) = HEARTBEAT_LABEL;
    let heartbeats = fleet.hub.kubectl_ok(&[
        "get",
        "leases",
        "-A",
        "-l",
        &format!("{key}={value}"),
        "-o",
        "jsonpath={range .items[*]}{.metadata.namespace}={.spec.holderIdentity};{end}",
    ]);
    assert_eq!(
        heartbeats, "eu-1=eu-1;us-1=;",
        "the hub finds every member's heartbeat by its label, and eu-1's renewal in it"
    );
    for (what, refused) in refused_elsewhere(&hub, (&eu, &us)) {
        assert_eq!(refused, Some(403), "{what} as eu-1: {refused:?}");
    }

    for (n, member) in fleet.members.iter().enumerate() {
        let reply = https_get(
            member.url(),
            member.ca_pem(),
            "/api/v1/namespaces",
            Some(&eu.token),
        )
        .unwrap_or_else(|e| panic!("member {n}: {e}"));
        assert_eq!(
            reply.status, 401,
            "member {n}: the hub's token for eu-1 is no credential there: {}",
            reply.body
        );
    }

    let urls: Vec<(String, String)> = (fleet.members.iter())
        .map(|m| (m.url().to_owned(), m.ca_pem().to_owned()))
        .collect();
    assert_ne!(
        urls[0].0, urls[1].0,
        "each member is a control plane of its own"
    );
    drop(fleet);
    for (url, ca) in urls {
        assert!(
            https_get(&url, &ca, "/readyz", None).is_err(),
            "{url} still answers after the fleet was dropped"
        );
    }
}

/// The member reads what is placed for it, and writes its reports: a Placement's status and
/// its heartbeat.
fn reads_and_reports_in_its_own_namespace(hub: &Client, member: &Admission) {
    let own = Some(member.cluster.as_str());
    let all = ListParams::default();
    let placements = smol::block_on(hub.list::<Placement>(own, &all)).expect("list placements");
    let names: Vec<&str> = placements.items.iter().map(|p| p.metadata.name()).collect();
    assert_eq!(names, [PLACED]);
    let content = &placements.items[0].spec["content"]["data"]["ca.crt"];
    assert_eq!(
        content,
        &json!("PEM for eu-1"),
        "its own content, not another's"
    );
    let secrets = smol::block_on(hub.list::<Secret>(own, &all)).expect("list secrets");
    assert!(
        secrets.items.iter().any(|s| s.metadata.name() == CARRIER),
        "the Secret placed for it is readable"
    );
    let status = json!({"status": {"observedHash": "h", "synced": 1}});
    smol::block_on(hub.patch_status::<Placement>(own, PLACED, &status))
        .expect("a member reports on its placement");
    let beat =
        json!({"spec": {"renewTime": "2026-12-05T00:00:00.000000Z", "holderIdentity": "eu-1"}});
    smol::block_on(hub.patch_merge::<Lease>(own, HEARTBEAT_LEASE, &beat))
        .expect("a member renews its heartbeat");
}

/// What a member must not do, with the HTTP status each attempt got (None: it succeeded).
fn refused_elsewhere(
    hub: &Client,
    (member, other): (&Admission, &Admission),
) -> Vec<(&'static str, Option<u16>)> {
    let (own, theirs) = (Some(member.cluster.as_str()), Some(other.cluster.as_str()));
    let all = ListParams::default();
    let code = |result: Result<(), Error>| result.err().and_then(|e| e.code());
    let beat = json!({"spec": {"holderIdentity": member.cluster}});
    let spec = json!({"spec": {"content": {"data": {"ca.crt": "forged"}}}});
    let secret = Secret {
        metadata: skiff::kube::api::ObjectMeta::named(own, "planted"),
        ..Secret::default()
    };
    vec![
        (
            "list another member's placements",
            code(smol::block_on(hub.list::<Placement>(theirs, &all)).map(drop)),
        ),
        (
            "list another member's secrets",
            code(smol::block_on(hub.list::<Secret>(theirs, &all)).map(drop)),
        ),
        (
            "renew another member's heartbeat",
            code(
                smol::block_on(hub.patch_merge::<Lease>(theirs, HEARTBEAT_LEASE, &beat)).map(drop),
            ),
        ),
        (
            "report on another member's placement",
            code(smol::block_on(hub.patch_status::<Placement>(theirs, PLACED, &beat)).map(drop)),
        ),
        (
            "list placements across the hub",
            code(smol::block_on(hub.list::<Placement>(None, &all)).map(drop)),
        ),
        (
            "list the hub's namespaces (which clusters exist)",
            code(smol::block_on(hub.list::<Namespace>(None, &all)).map(drop)),
        ),
        (
            "change what is placed for itself",
            code(smol::block_on(hub.patch_merge::<Placement>(own, PLACED, &spec)).map(drop)),
        ),
        (
            "write a Secret in its own namespace",
            code(smol::block_on(hub.create(&secret)).map(drop)),
        ),
    ]
}
