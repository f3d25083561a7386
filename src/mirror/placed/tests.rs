//! The member's heartbeat as the probe of its hub: one the hub does not answer marks the hub
//! failing; the next one answered is the hub's recovery, which the hub watches wait for.

use super::*;
use crate::kube::Config;
use crate::testing::responder;
use serde_json::json;
use std::net::TcpListener;

fn stores_at(url: &str) -> PlacedStores {
    let client = Client::new(Config::new(http_types::Url::parse(url).expect("url")));
    let hub = Hub {
        name: "hub".into(),
        namespace: "member-a".into(),
        kinds: BTreeSet::new(),
        heartbeat: Duration::from_secs(60),
    };
    PlacedStores::new(hub, client.expect("client"), None)
}

/// An address nothing listens on: connections are refused.
fn nobody() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    drop(listener);
    url
}

/// A hub that answers every request with the heartbeat Lease.
fn answering_hub() -> String {
    responder::serve(|_| {
        let meta = json!({"name": "heartbeat", "namespace": "member-a"});
        let lease =
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta});
        (200, lease)
    })
}

#[test]
fn a_heartbeat_answered_after_one_that_was_not_is_the_hubs_recovery() {
    let unreachable = stores_at(&nobody());
    let seen = unreachable.recovery.count();
    let probe = smol::block_on(unreachable.beat("me"));
    assert!(probe.is_err_and(|e| e.is_unanswered()), "nobody listens");
    assert!(unreachable.recovery.is_failing());

    let mut back = stores_at(&answering_hub());
    back.recovery = unreachable.recovery.clone();
    smol::block_on(back.beat("me")).expect("answered");
    assert!(!back.recovery.is_failing());
    assert_eq!(back.recovery.count(), seen + 1, "one recovery");
}
