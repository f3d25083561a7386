//! The kubeconfig YAML reader: every shape kubeconfigs are written in, and clear refusals.

use super::*;
use serde_json::json;

fn read(text: &str) -> Value {
    to_value(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn refused(text: &str) -> YamlError {
    to_value(text).expect_err(text)
}

#[test]
fn kubectl_style_block_mappings_with_sequences_at_their_keys_indentation() {
    let text = "apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tQ0E=
    server: https://127.0.0.1:40083
  name: kind-kind
contexts:
- context:
    cluster: kind-kind
    user: kind-kind
  name: kind-kind
current-context: kind-kind
kind: Config
preferences: {}
users:
- name: kind-kind
  user:
    client-certificate-data: LS0tQ0VSVA==
";
    assert_eq!(
        read(text),
        json!({"apiVersion": "v1",
            "clusters": [{"cluster": {"certificate-authority-data": "LS0tQ0E=",
                "server": "https://127.0.0.1:40083"}, "name": "kind-kind"}],
            "contexts": [{"context": {"cluster": "kind-kind", "user": "kind-kind"}, "name": "kind-kind"}],
            "current-context": "kind-kind", "kind": "Config", "preferences": {},
            "users": [{"name": "kind-kind", "user": {"client-certificate-data": "LS0tQ0VSVA=="}}]})
    );
}

#[test]
fn indented_sequences_nested_lists_and_scalars_of_every_kind() {
    let text = "---
# written by hand
users:
  - name: eks   # the cluster's user
    user:
      exec:
        args:
          - --region
          - 'us-west-2'
          - \"say \\\"hi\\\"\\tthere\"
        env: null
        provideClusterInfo: true
        installHint: ~
        interactiveMode: Never
        empty:
        it's: it's plain
        url: http://example.com/#frag
        quoted: 'it''s # not a comment'
";
    assert_eq!(
        read(text),
        json!({"users": [{"name": "eks", "user": {"exec": {
            "args": ["--region", "us-west-2", "say \"hi\"\tthere"],
            "env": null, "provideClusterInfo": true, "installHint": null,
            "interactiveMode": "Never", "empty": null, "it's": "it's plain",
            "url": "http://example.com/#frag", "quoted": "it's # not a comment"}}}]})
    );
}

#[test]
fn flow_collections_on_one_line_or_several() {
    let text = "clusters:
- name: c
  cluster: {server: 'https://34.123.45.67', insecure-skip-tls-verify: false}
contexts:
- {name: c, context: {cluster: c, user: u}}
args: [get-token, --login,
  azurecli]
env: [{name: A, value: \"1\"}, {name: B, value: two words}]
";
    assert_eq!(
        read(text),
        json!({"clusters": [{"name": "c", "cluster": {"server": "https://34.123.45.67",
                "insecure-skip-tls-verify": false}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "args": ["get-token", "--login", "azurecli"],
            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "two words"}]})
    );
}

#[test]
fn a_plain_value_may_go_on_over_more_indented_lines() {
    let text = "exec:
  installHint: Install gke-gcloud-auth-plugin for use with kubectl by following
    https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin
  provideClusterInfo: true
";
    assert_eq!(
        read(text)["exec"]["installHint"],
        "Install gke-gcloud-auth-plugin for use with kubectl by following https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin"
    );
}

#[test]
fn block_scalars_keep_or_fold_lines_as_their_header_says() {
    let text = "hint: |2

    kubelogin is not installed.

    To learn more, see https://aka.ms/aks/kubelogin # part of the text
next: >-
  folded
  into one

  and a second line
kept: |+
  a

";
    let value = read(text);
    assert_eq!(
        value["hint"],
        "\n  kubelogin is not installed.\n\n  To learn more, see https://aka.ms/aks/kubelogin # part of the text\n"
    );
    assert_eq!(value["next"], "folded into one\nand a second line");
    assert_eq!(value["kept"], "a\n\n");
    assert!(refused("literal: |\n    indented more\n  stays\n").line > 0);
    let aks =
        "exec:\n  installHint: |2\n\n    kubelogin is missing.\n  provideClusterInfo: false\n";
    assert_eq!(
        read(aks),
        json!({"exec": {"installHint": "\nkubelogin is missing.\n", "provideClusterInfo": false}})
    );
}

#[test]
fn empty_documents_and_windows_line_ends() {
    assert_eq!(read(""), Value::Null);
    assert_eq!(read("# only a comment\n"), Value::Null);
    assert_eq!(read("a: 1\r\nb: x\r\n"), json!({"a": "1", "b": "x"}));
    assert_eq!(read("%YAML 1.2\n---\na: b\n...\n"), json!({"a": "b"}));
}

#[test]
fn what_is_not_supported_or_not_yaml_is_refused_naming_the_line() {
    let cases = [
        ("apiVersion: v1\nclusters: [ {name: test\n  : :\n", 2),
        ("a: b\n\tc: d\n", 2),
        ("a: &anchor x\nb: *anchor\n", 1),
        ("a: !!str x\n", 1),
        ("a: x\n---\nb: y\n", 2),
        ("a: 'open\n", 1),
        ("a: b\na: c\n", 2),
        ("a:\n  b: c\n d: e\n", 3),
        ("? complex\n: key\n", 1),
        ("a: \"\\q\"\n", 1),
    ];
    for (text, line) in cases {
        let e = refused(text);
        assert_eq!(e.line, line, "{text:?}: {e}");
    }
}

#[test]
fn from_str_reads_into_typed_structs() {
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Entry {
        name: String,
        enabled: Option<bool>,
    }
    let entries: Vec<Entry> = from_str("- name: a\n  enabled: true\n- name: b\n").unwrap();
    assert_eq!(entries[0].enabled, Some(true));
    assert_eq!(entries[1].enabled, None);
    let wrong = from_str::<Vec<Entry>>("- name: a\n  enabled: maybe\n").unwrap_err();
    assert!(wrong.message.contains("bool"), "{wrong}");
}

#[test]
fn the_shipped_deployment_reads() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/manifests/deployment.yaml");
    let deployment = read(&std::fs::read_to_string(path).expect("manifests/deployment.yaml"));
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsUser"], "65532");
    assert!(
        pod["containers"][0]["args"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
    );
}
