//! The shipped NetworkPolicy admits scrapers, and nobody else, to skiff's pods.
//!
//! Why: a rule without `from` admits every pod in the cluster. The kubelet's probes need none
//! (traffic from the pod's own node is always allowed), so a rule for the probe port would
//! only let any pod flood it.

use crate::support::helm::parse_objects;
use std::path::Path;

fn policy() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/networkpolicy.yaml");
    let text = std::fs::read_to_string(&path).expect("read manifests/networkpolicy.yaml");
    let mut objects = parse_objects(&text);
    assert_eq!(
        objects.len(),
        1,
        "one object in manifests/networkpolicy.yaml"
    );
    objects.remove(0)
}

#[test]
fn every_ingress_rule_names_its_sources_and_none_opens_the_probe_port() {
    let policy = policy();
    assert_eq!(policy["kind"], "NetworkPolicy");
    let rules = policy["spec"]["ingress"].as_array().expect("ingress rules");
    assert!(!rules.is_empty(), "scrapers must be let in");
    for rule in rules {
        let sources = rule["from"].as_array().map_or(0, Vec::len);
        assert!(sources > 0, "a rule admits every source: {rule}");
        let ports = rule["ports"].as_array().cloned().unwrap_or_default();
        assert!(!ports.is_empty(), "a rule admits every port: {rule}");
        for port in ports {
            assert!(
                port["port"] != "probes" && port["port"] != 8081,
                "a rule opens the probe port: {rule}"
            );
        }
    }
}
