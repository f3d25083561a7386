//! The Helm chart, rendered by the real Helm (no cluster needed): with default values it renders
//! what `kustomize build` does, values change what they say and nothing else, the schema refuses
//! bad values by name, `helm lint` is clean, and chart, image and installer share one version.
//!
//! Why: `charts/skiff` is generated from `manifests/` (`make chart`, hack/chartgen), so the two
//! install paths must agree object for object; a manifest edited without regenerating the chart
//! fails here, with the command that fixes it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::control_plane::{bin_dir, require_e2e_binaries, say};
use crate::support::helm::{Helm, chart_dir, container_args, find, object_key, parse_objects};
use crate::support::kubectl::output_ok;
use crate::support::skiff::TempDir;
use serde_json::{Value, json};
use skiff::kind::{EnabledBy, Guard, Kind, TABLE};

const VERSION: &str = env!("CARGO_PKG_VERSION");
const REGENERATE: &str = "run `make chart` to regenerate charts/skiff from manifests/";
/// Labels and annotations Helm's chart adds that kustomize's build has no reason to carry.
const HELM_LABELS: [&str; 4] = [
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
];
const KEEP_ANNOTATION: &str = "helm.sh/resource-policy";

/// `kubectl kustomize DIR` (relative to the repository), parsed.
fn kustomize(dir: &str) -> Vec<Value> {
    let path = format!("{}/{dir}", env!("CARGO_MANIFEST_DIR"));
    let output = Command::new(bin_dir().join("kubectl"))
        .args(["kustomize", &path])
        .output()
        .expect("run kubectl kustomize");
    parse_objects(&output_ok(&format!("kubectl kustomize {dir}"), output))
}

/// `make build-installer` with its default image into a temp file (dist/install.yaml's content).
fn installer() -> Vec<Value> {
    let dir = TempDir::new("chart-installer");
    let path = dir.0.join("install.yaml");
    let output = Command::new("make")
        .args(["--no-print-directory", "-C", env!("CARGO_MANIFEST_DIR")])
        .arg("build-installer")
        .arg(format!("INSTALLER={}", path.display()))
        .output()
        .expect("run make");
    output_ok("make build-installer", output);
    let text = std::fs::read_to_string(&path).expect("read the installer");
    parse_objects(&text)
}

/// The chart's objects without what only Helm adds (its labels, the CRD's keep annotation).
fn without_helm_metadata(objects: Vec<Value>) -> Vec<Value> {
    objects
        .into_iter()
        .map(|mut object| {
            let meta = object["metadata"].as_object_mut().expect("metadata");
            for (field, keys) in [
                ("labels", &HELM_LABELS[..]),
                ("annotations", &[KEEP_ANNOTATION][..]),
            ] {
                if let Some(map) = meta.get_mut(field).and_then(Value::as_object_mut) {
                    keys.iter().for_each(|key| drop(map.remove(*key)));
                    if map.is_empty() {
                        meta.remove(field);
                    }
                }
            }
            object
        })
        .collect()
}

fn by_key(objects: &[Value]) -> BTreeMap<String, &Value> {
    objects.iter().map(|o| (object_key(o), o)).collect()
}

/// Panics describing every difference between the chart's objects and kustomize's.
fn assert_same_objects(chart: &[Value], kustomize: &[Value], what: &str) {
    let (chart, kustomize) = (by_key(chart), by_key(kustomize));
    let mut differences = Vec::new();
    for key in chart.keys().chain(kustomize.keys()) {
        match (chart.get(key), kustomize.get(key)) {
            (Some(c), Some(k)) if c == k => {}
            (Some(c), Some(k)) => differences.push(format!(
                "{key} differs:\n  chart:     {c}\n  kustomize: {k}"
            )),
            (Some(_), None) => differences.push(format!("{key}: only in the chart")),
            (None, _) => differences.push(format!("{key}: only in kustomize's build")),
        }
    }
    differences.dedup();
    assert!(
        differences.is_empty(),
        "{what}: the chart and kustomize render different objects; {REGENERATE}\n{}",
        differences.join("\n")
    );
}

fn skiff_system<S: AsRef<str>>(helm: &Helm, extra: &[S]) -> Vec<Value> {
    let extra: Vec<&str> = extra.iter().map(AsRef::as_ref).collect();
    helm.template("skiff", "skiff-system", &extra)
}

/// `--set VALUE` for each of `values`.
fn sets(values: &[&str]) -> Vec<String> {
    values
        .iter()
        .flat_map(|value| ["--set".to_owned(), (*value).to_owned()])
        .collect()
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn default_values_render_what_kustomize_builds() {
    require_e2e_binaries();
    let chart = without_helm_metadata(skiff_system::<&str>(&Helm::new(), &[]));
    let installer: Vec<Value> = installer()
        .into_iter()
        .filter(|o| o["kind"] != "Namespace") // helm install --create-namespace makes it
        .collect();
    assert!(installer.len() >= 14, "{installer:?}");
    assert_same_objects(&chart, &installer, "default values vs make build-installer");
    say(&format!(
        "helm chart: {} objects with default values, the same as kustomize's build",
        chart.len()
    ));
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn secret_target_names_render_what_the_kustomize_component_adds() {
    require_e2e_binaries();
    let extra = sets(&["secretTargetNames={app-tls}", "image.tag=latest"]);
    let chart = without_helm_metadata(skiff_system(&Helm::new(), &extra));
    let component = overlay_objects("deploy/secret-targets");
    assert_same_objects(
        &chart,
        &component,
        "secretTargetNames={app-tls} vs deploy/secret-targets",
    );
}

/// Every kit kind and `edit,view`: what `deploy/kinds` sets.
const ALL_KINDS: [&str; 2] = [
    "kinds={networkpolicies.networking.k8s.io,limitranges,resourcequotas,rolebindings.rbac.authorization.k8s.io,serviceaccounts}",
    "bindableRoles={edit,view}",
];

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn kinds_render_what_the_kustomize_component_adds() {
    require_e2e_binaries();
    let mut values = ALL_KINDS.to_vec();
    values.push("image.tag=latest");
    let chart = without_helm_metadata(skiff_system(&Helm::new(), &sets(&values)));
    let component = overlay_objects("deploy/kinds");
    assert_same_objects(&chart, &component, "every kind vs deploy/kinds");
}

/// What `fleet.hub.enable` renders is what `deploy/fleet-hub` builds: the Placement CRD, both
/// ClusterRoles with the component's rules (parsed, so the chart's cannot drift from
/// manifests/components/fleet-hub/rbac.yaml), the binding to skiff's ServiceAccount and
/// `--fleet-hub`.
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn fleet_hub_renders_what_the_kustomize_component_adds() {
    require_e2e_binaries();
    let extra = sets(&["fleet.hub.enable=true", "image.tag=latest"]);
    let chart = without_helm_metadata(skiff_system(&Helm::new(), &extra));
    let component = overlay_objects("deploy/fleet-hub");
    assert_same_objects(&chart, &component, "fleet.hub.enable vs deploy/fleet-hub");
}

/// What `fleet.member.enable` renders is what `deploy/fleet-member` builds: the hub's Secret
/// mounted as a directory (a subPath mount would never see a rotated token) and the flags
/// reading it, and no object besides.
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn fleet_member_renders_what_the_kustomize_component_adds() {
    require_e2e_binaries();
    let values = [
        "fleet.member.enable=true",
        "fleet.member.hubName=hub",
        "image.tag=latest",
    ];
    let chart = without_helm_metadata(skiff_system(&Helm::new(), &sets(&values)));
    let component = overlay_objects("deploy/fleet-member");
    assert_same_objects(
        &chart,
        &component,
        "fleet.member.enable vs deploy/fleet-member",
    );
}

/// The objects of the fleet (the Placement CRD, anything named `*fleet*`) among `objects`.
fn fleet_objects(objects: &[Value]) -> Vec<String> {
    let fleet = |o: &&Value| {
        o["metadata"]["name"]
            .as_str()
            .is_some_and(|n| n.contains("fleet") || n.starts_with("placements."))
    };
    objects.iter().filter(fleet).map(object_key).collect()
}

/// The flags the values add after the manifest's own args.
fn added_args(objects: &[Value], deployment: &str) -> Vec<String> {
    let manifest_args = crate::support::pod::PodSpec::from_deployment().args.len();
    let args = container_args(find(objects, "Deployment", deployment));
    args.into_iter().skip(manifest_args).collect()
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn fleet_values_set_their_flags_and_objects_and_nothing_when_off() {
    require_e2e_binaries();
    let helm = Helm::new();
    let defaults = skiff_system::<&str>(&helm, &[]);
    assert_eq!(fleet_objects(&defaults), Vec::<String>::new());
    let pod = &find(&defaults, "Deployment", "skiff")["spec"]["template"]["spec"];
    assert!(pod["volumes"].is_null(), "{pod}");
    // Settings of a side that is off set nothing.
    let off = skiff_system(
        &helm,
        &sets(&[
            "fleet.hub.memberSilenceAfter=5m",
            "fleet.hub.qps=300",
            "fleet.member.hubName=hub-eu",
            "fleet.member.heartbeatPeriod=30s",
        ]),
    );
    assert_eq!(fleet_objects(&off), Vec::<String>::new());
    assert_eq!(added_args(&off, "skiff"), Vec::<String>::new());

    let hub = |values: &[&str]| {
        let values = sets(values);
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        helm.template("ops", "platform", &values)
    };
    let objects = hub(&[
        "fleet.hub.enable=true",
        "fleet.hub.memberSilenceAfter=5m",
        "fleet.hub.qps=300",
        "fleet.hub.burst=600",
    ]);
    assert_eq!(
        added_args(&objects, "ops-skiff"),
        [
            "--fleet-hub",
            "--member-silence-after=5m",
            "--fleet-qps=300",
            "--fleet-burst=600"
        ]
    );
    assert_eq!(
        fleet_objects(&objects),
        [
            "CustomResourceDefinition//placements.skiff.dev",
            "ClusterRole//ops-skiff-fleet-hub",
            "ClusterRole//ops-skiff-fleet-member",
            "ClusterRoleBinding//ops-skiff-fleet-hub",
        ]
    );
    let binding = find(&objects, "ClusterRoleBinding", "ops-skiff-fleet-hub");
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": "ops-skiff", "namespace": "platform"}])
    );
    let crd = find(&objects, "CustomResourceDefinition", "placements.skiff.dev");
    assert_eq!(crd["metadata"]["annotations"][KEEP_ANNOTATION], "keep");
    // The heartbeat Lease a member may renew is the one hack/hub-admit.sh makes, whatever the
    // release's name.
    let member = find(&objects, "ClusterRole", "ops-skiff-fleet-member");
    assert_eq!(member["rules"][3]["resourceNames"], json!(["skiff-member"]));
    // crd.enable=false leaves the Placement CRD out with the others, and the rights in.
    let without_crds = hub(&["fleet.hub.enable=true", "crd.enable=false"]);
    assert_eq!(fleet_objects(&without_crds).len(), 3);
    assert!(!fleet_objects(&without_crds)[0].starts_with("CustomResourceDefinition"));

    let objects = skiff_system(
        &helm,
        &sets(&[
            "fleet.member.enable=true",
            "fleet.member.hubName=hub-eu",
            "fleet.member.hubSecret=hub-eu-credentials",
            "fleet.member.hubKinds={configmaps,secrets}",
            "fleet.member.heartbeatPeriod=30s",
            "secretTargetNames={app-tls}",
            "metrics.certSecret=skiff-metrics-tls",
        ]),
    );
    assert_eq!(
        added_args(&objects, "skiff"),
        [
            "--secret-target-names=app-tls",
            "--hub-kubeconfig=/etc/skiff/hub/kubeconfig",
            "--hub-name=hub-eu",
            "--hub-kinds=configmaps,secrets",
            "--hub-heartbeat-period=30s",
            "--metrics-cert-dir=/etc/skiff/metrics-certs",
        ]
    );
    assert_eq!(
        fleet_objects(&objects),
        Vec::<String>::new(),
        "a member adds no right"
    );
    let pod = &find(&objects, "Deployment", "skiff")["spec"]["template"]["spec"];
    assert_eq!(
        pod["volumes"][1],
        json!({"name": "hub", "secret": {"secretName": "hub-eu-credentials"}})
    );
    assert_eq!(
        pod["containers"][0]["volumeMounts"][1],
        json!({"name": "hub", "mountPath": "/etc/skiff/hub", "readOnly": true}),
        "mounted as a directory, never with subPath"
    );
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn projections_and_orphan_set_their_flags_only_with_self_service() {
    require_e2e_binaries();
    let helm = Helm::new();
    let values = [
        "selfService.projections={secrets-as-configmaps}",
        "selfService.orphan=true",
        "secretTargetNames={app-tls}",
    ];
    let off = skiff_system(&helm, &sets(&values));
    assert_eq!(added_args(&off, "skiff"), ["--secret-target-names=app-tls"]);
    let mut on = values.to_vec();
    on.push("selfService.enable=true");
    let objects = skiff_system(&helm, &sets(&on));
    assert_eq!(
        added_args(&objects, "skiff"),
        [
            "--secret-target-names=app-tls",
            "--self-service",
            "--offer-namespace-selector=skiff.dev/may-offer=true",
            "--max-copies-per-tenant-mirror=100",
            "--self-service-projections=secrets-as-configmaps",
            "--self-service-orphan",
        ]
    );
    let defaults = skiff_system(&helm, &sets(&["selfService.enable=true"]));
    let args = added_args(&defaults, "skiff");
    assert!(
        !args
            .iter()
            .any(|a| a.contains("projections") || a.contains("orphan")),
        "none by default: {args:?}"
    );
}

/// The chart's fleet and self-service args are what skiff's own parser takes (the one main
/// runs): each value reaches its setting, switches included, which skiff takes bare.
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn the_rendered_fleet_and_self_service_args_parse_into_their_settings() {
    require_e2e_binaries();
    let helm = Helm::new();
    let settings = |values: &[&str]| {
        let objects = skiff_system(&helm, &sets(values));
        let args = container_args(find(&objects, "Deployment", "skiff"));
        skiff::flags::parse(&args).unwrap_or_else(|e| panic!("skiff refuses {args:?}: {e}"))
    };
    let hub = settings(&[
        "fleet.hub.enable=true",
        "fleet.hub.memberSilenceAfter=5m",
        "fleet.hub.qps=7.5",
        "fleet.hub.burst=600",
    ]);
    let fleet_hub = hub.fleet_hub.expect("--fleet-hub on");
    assert_eq!(fleet_hub.member_silence_after, Duration::from_secs(300));
    assert_eq!((fleet_hub.qps, fleet_hub.burst), (7.5, 600));
    assert!(hub.hub.is_none() && hub.self_service.is_none());

    let member = settings(&[
        "fleet.member.enable=true",
        "fleet.member.hubName=hub-eu",
        "fleet.member.hubKinds={configmaps,secrets}",
        "fleet.member.heartbeatPeriod=30s",
        "secretTargetNames={app-tls}",
        "selfService.enable=true",
        "selfService.projections={secrets-as-configmaps}",
        "selfService.orphan=true",
    ]);
    let hub_member = member.hub.expect("--hub-kubeconfig set");
    assert_eq!(
        hub_member.kubeconfig,
        Path::new("/etc/skiff/hub/kubeconfig")
    );
    assert_eq!(hub_member.name, "hub-eu");
    assert_eq!(hub_member.kinds.len(), 2);
    assert_eq!(hub_member.heartbeat, Duration::from_secs(30));
    assert!(member.fleet_hub.is_none());
    let self_service = member.self_service.expect("--self-service on");
    assert_eq!(self_service.projections_flag(), "secrets-as-configmaps");
    assert!(self_service.orphan);

    let defaults = settings(&["selfService.enable=true"]);
    let self_service = defaults.self_service.expect("--self-service on");
    assert_eq!(self_service.projections_flag(), "none");
    assert!(!self_service.orphan);
    assert!(defaults.fleet_hub.is_none() && defaults.hub.is_none());
}

/// The rules of the kinds ClusterRole the chart renders with `values`, as `resource verbs`.
fn kinds_rules(values: &[&str]) -> Vec<String> {
    let objects = skiff_system(&Helm::new(), &sets(values));
    let role = objects
        .iter()
        .find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == "skiff-kinds");
    let Some(role) = role else {
        return Vec::new();
    };
    let rules = role["rules"].as_array().cloned().unwrap_or_default();
    rules
        .iter()
        .map(|r| {
            let names = r
                .get("resourceNames")
                .map_or(String::new(), |n| format!(" {n}"));
            format!(
                "{} {}{names}",
                r["resources"][0].as_str().unwrap_or(""),
                r["verbs"]
            )
        })
        .collect()
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn each_kind_gets_exactly_its_rbac_and_none_without_kinds() {
    require_e2e_binaries();
    assert_eq!(
        kinds_rules(&[]),
        Vec::<String>::new(),
        "no kinds, no ClusterRole"
    );
    let keep = r#"["get","list","watch","create","patch","delete"]"#;
    assert_eq!(
        kinds_rules(&["kinds={limitranges}"]),
        [format!("limitranges {keep}")]
    );
    assert_eq!(
        kinds_rules(&["kinds={serviceaccounts}"]),
        [format!("serviceaccounts {keep}")]
    );
    assert_eq!(
        kinds_rules(&[
            "kinds={rolebindings.rbac.authorization.k8s.io}",
            "bindableRoles={edit}"
        ]),
        [
            format!("rolebindings {keep}"),
            r#"clusterroles ["bind"] ["edit"]"#.to_owned()
        ]
    );
    let objects = skiff_system(&Helm::new(), &sets(&["kinds={resourcequotas}"]));
    let deployment = objects
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("Deployment");
    let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
    assert!(args.contains("--kinds=resourcequotas"), "{args}");
    assert!(!args.contains("--bindable-roles"), "{args}");
}

/// The chart cannot call Rust, so it is checked against the kind table here: every row
/// `--kinds` enables is a name the schema allows, and rendered alone gives exactly that row's
/// rule (its API group and resource) and that `--kinds` entry; the schema allows no other.
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn the_chart_names_and_grants_each_kind_as_the_kind_table_has_it() {
    require_e2e_binaries();
    let flagged: Vec<&Kind> = (TABLE.iter())
        .filter(|k| k.enabled_by == EnabledBy::KindsFlag)
        .collect();
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(chart_dir().join("values.schema.json")).expect("the schema"),
    )
    .expect("JSON");
    let allowed = &schema["properties"]["kinds"]["items"]["enum"];
    let names: Vec<String> = flagged.iter().map(|k| k.flag_name()).collect();
    assert_eq!(
        allowed,
        &json!(names),
        "values.schema.json's kinds vs the kind table"
    );
    let copied: Vec<String> = TABLE.iter().map(|k| k.flag_name()).collect();
    let properties = &schema["properties"];
    for (value, enum_) in [
        (
            "selfService.kinds",
            &properties["selfService"]["properties"]["kinds"],
        ),
        (
            "fleet.member.hubKinds",
            &properties["fleet"]["properties"]["member"]["properties"]["hubKinds"],
        ),
    ] {
        assert_eq!(
            enum_["items"]["enum"],
            json!(copied),
            "{value} vs the kind table"
        );
    }
    let projections: Vec<String> = (TABLE.iter())
        .flat_map(|k| k.published_as.iter().map(move |p| k.projection_name(p)))
        .collect();
    assert_eq!(
        properties["selfService"]["properties"]["projections"]["items"]["enum"],
        json!(projections),
        "selfService.projections vs the kind table"
    );
    for kind in flagged {
        let mut values = vec![format!("kinds={{{}}}", kind.flag_name())];
        if kind.guard == Guard::BindableRoles {
            values.push("bindableRoles={edit}".to_owned());
        }
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        let objects = skiff_system(&Helm::new(), &sets(&values));
        let role = objects
            .iter()
            .find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == "skiff-kinds")
            .expect("the kinds ClusterRole");
        let rule = &role["rules"][0];
        assert_eq!(rule["apiGroups"], json!([kind.group]), "{}", kind.name);
        assert_eq!(rule["resources"], json!([kind.resource]), "{}", kind.name);
        let deployment = find(&objects, "Deployment", "skiff");
        let args = container_args(deployment);
        assert!(
            args.contains(&format!("--kinds={}", kind.flag_name())),
            "{}: {args:?}",
            kind.name
        );
    }
}

/// The policy on skiff's RoleBinding writes comes with rolebindings and only then, and names
/// the release's ServiceAccount, namespace and `bindingNamespaceLabel`, as the flag does.
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn the_rolebinding_policy_comes_with_rolebindings_and_names_the_release() {
    require_e2e_binaries();
    let policies = |objects: &[Value]| -> Vec<String> {
        let admission = |o: &&Value| {
            o["kind"]
                .as_str()
                .is_some_and(|k| k.starts_with("Validating"))
        };
        let names = objects.iter().filter(admission).map(object_key);
        names.filter(|k| k.contains("rolebindings")).collect()
    };
    let helm = Helm::new();
    let template = |values: &[&str]| {
        let values = sets(values);
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        helm.template("ops", "platform", &values)
    };
    let limits = template(&["kinds={limitranges}"]);
    assert_eq!(policies(&limits), Vec::<String>::new());
    let values = [
        "kinds={rolebindings.rbac.authorization.k8s.io}",
        "bindableRoles={edit}",
        "bindingNamespaceLabel=example.com/team",
    ];
    let objects = template(&values);
    assert_eq!(policies(&objects).len(), 2, "{:?}", policies(&objects));
    let policy = find(
        &objects,
        "ValidatingAdmissionPolicy",
        "ops-skiff-rolebindings",
    );
    let spec = &policy["spec"];
    assert_eq!(
        spec["matchConditions"][0]["expression"],
        "request.userInfo.username == 'system:serviceaccount:platform:ops-skiff'"
    );
    assert_eq!(spec["variables"][0]["expression"], "'platform'");
    assert_eq!(spec["variables"][1]["expression"], "'example.com/team'");
    let deployment = find(&objects, "Deployment", "ops-skiff");
    let flag = "--binding-namespace-label=example.com/team".to_owned();
    assert!(container_args(deployment).contains(&flag));
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn prometheus_enable_renders_the_service_monitor() {
    require_e2e_binaries();
    let chart = without_helm_metadata(skiff_system(
        &Helm::new(),
        &sets(&["prometheus.enable=true"]),
    ));
    let monitors: Vec<Value> = chart
        .into_iter()
        .filter(|o| o["kind"] == "ServiceMonitor")
        .collect();
    assert_same_objects(
        &monitors,
        &kustomize("manifests/prometheus"),
        "prometheus.enable",
    );
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn release_name_and_namespace_name_every_object() {
    require_e2e_binaries();
    let objects =
        Helm::new().template("ops", "platform", &["--set", "leaderElection.id=ops-lease"]);
    let text = serde_json::to_string(&objects).expect("JSON");
    assert!(
        !text.contains("skiff-system"),
        "the manifests' namespace is left: {text}"
    );
    for object in &objects {
        let namespace = &object["metadata"]["namespace"];
        assert!(
            namespace.is_null() || namespace == "platform",
            "{}",
            object_key(object)
        );
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        assert!(
            name.starts_with("ops-skiff") || object["kind"] == "CustomResourceDefinition",
            "{} is not named after the release",
            object_key(object)
        );
        for subject in object["subjects"].as_array().into_iter().flatten() {
            assert_eq!(subject["name"], "ops-skiff", "{}", object_key(object));
            assert_eq!(subject["namespace"], "platform", "{}", object_key(object));
        }
    }
    let deployment = find(&objects, "Deployment", "ops-skiff");
    assert_eq!(
        deployment["spec"]["template"]["spec"]["serviceAccountName"],
        "ops-skiff"
    );
    assert!(container_args(deployment).contains(&"--leader-election-id=ops-lease".to_owned()));
    let role = find(&objects, "Role", "ops-skiff-leader-election");
    assert_eq!(role["rules"][1]["resourceNames"], json!(["ops-lease"]));
    let flow = find(&objects, "FlowSchema", "ops-skiff-leader-election");
    let subject = &flow["spec"]["rules"][0]["subjects"][0]["serviceAccount"];
    assert_eq!(
        subject,
        &json!({"name": "ops-skiff", "namespace": "platform"})
    );
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn values_set_the_flags_rbac_and_pod_settings_they_name() {
    require_e2e_binaries();
    let digest = format!("sha256:{}", "a".repeat(64));
    let image_digest = format!("image.digest={digest}");
    let values = [
        "image.repository=registry.example/team/skiff",
        &image_digest,
        "image.pullPolicy=Always",
        "replicaCount=3",
        "leaderElection.leaseDuration=30s",
        "leaderElection.renewDeadline=20s",
        "leaderElection.retryPeriod=4s",
        "leaderElection.qps=7",
        "leaderElection.burst=12",
        "kubeAPI.qps=12.5",
        "kubeAPI.burst=80",
        "sourceNamespaces={skiff-system,shared}",
        "secretTargetNames={app-tls,pull}",
        "selfService.enable=true",
        "selfService.offerNamespaceSelector=tenancy",
        "selfService.maxCopiesPerTenantMirror=25",
        "selfService.kinds={configmaps,secrets}",
        "metrics.secure=false",
        "metrics.certSecret=skiff-metrics-tls",
        "nodeSelector.pool=system",
        "priorityClassName=system-cluster-critical",
        "imagePullSecrets[0].name=regcred",
        "tolerations[0].operator=Exists",
        "commonLabels.team=platform",
        "commonAnnotations.owner=ops",
        "podLabels.tier=control",
        "podAnnotations.scrape=yes",
        "podDisruptionBudget.minAvailable=2",
        "extraArgs={--log-level=debug}",
    ];
    let objects = skiff_system(&Helm::new(), &sets(&values));
    let deployment = find(&objects, "Deployment", "skiff");
    let pod = &deployment["spec"]["template"];
    let container = &pod["spec"]["containers"][0];
    assert_eq!(
        container["image"],
        format!("registry.example/team/skiff:{VERSION}@{digest}")
    );
    assert_eq!(container["imagePullPolicy"], "Always");
    assert_eq!(deployment["spec"]["replicas"], 3);
    let args = container_args(deployment);
    // After the manifest's own args, the flags the values set.
    let manifest_args = crate::support::pod::PodSpec::from_deployment().args.len();
    let added: Vec<&str> = (args.iter().skip(manifest_args))
        .map(String::as_str)
        .collect();
    assert_eq!(
        added,
        [
            "--leader-elect-lease-duration=30s",
            "--leader-elect-renew-deadline=20s",
            "--leader-elect-retry-period=4s",
            "--leader-elect-qps=7",
            "--leader-elect-burst=12",
            "--kube-api-qps=12.5",
            "--kube-api-burst=80",
            "--source-namespaces=skiff-system,shared",
            "--secret-target-names=app-tls,pull",
            "--self-service",
            "--offer-namespace-selector=tenancy",
            "--max-copies-per-tenant-mirror=25",
            "--self-service-kinds=configmaps,secrets",
            "--metrics-secure=false",
            "--metrics-cert-dir=/etc/skiff/metrics-certs",
            "--log-level=debug",
        ]
    );
    assert_eq!(
        container["volumeMounts"][0]["mountPath"],
        "/etc/skiff/metrics-certs"
    );
    assert_eq!(
        pod["spec"]["volumes"][0]["secret"]["secretName"],
        "skiff-metrics-tls"
    );
    assert_eq!(pod["spec"]["nodeSelector"], json!({"pool": "system"}));
    assert_eq!(pod["spec"]["priorityClassName"], "system-cluster-critical");
    assert_eq!(
        pod["spec"]["imagePullSecrets"],
        json!([{"name": "regcred"}])
    );
    assert_eq!(pod["spec"]["tolerations"], json!([{"operator": "Exists"}]));
    assert_eq!(pod["metadata"]["labels"]["tier"], "control");
    assert_eq!(pod["metadata"]["annotations"], json!({"scrape": "yes"}));
    let targets = find(&objects, "ClusterRole", "skiff-secret-targets");
    assert_eq!(
        targets["rules"][0]["resourceNames"],
        json!(["app-tls", "pull"])
    );
    let sources: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "Role" && o["metadata"]["name"] == "skiff-secret-sources")
        .collect();
    let namespaces: Vec<&Value> = sources
        .iter()
        .map(|o| &o["metadata"]["namespace"])
        .collect();
    assert_eq!(namespaces, [&json!("skiff-system"), &json!("shared")]);
    assert!(
        !objects
            .iter()
            .any(|o| o["metadata"]["name"] == "skiff-metrics-auth"),
        "plain-HTTP metrics need no TokenReview or SubjectAccessReview rights"
    );
    assert_eq!(
        find(&objects, "PodDisruptionBudget", "skiff")["spec"]["minAvailable"],
        2
    );
    for object in &objects {
        let meta = &object["metadata"];
        assert_eq!(meta["labels"]["team"], "platform", "{}", object_key(object));
        assert_eq!(
            meta["annotations"]["owner"],
            "ops",
            "{}",
            object_key(object)
        );
    }
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn switches_leave_their_objects_out() {
    require_e2e_binaries();
    let helm = Helm::new();
    let all = skiff_system::<&str>(&helm, &[]);
    let off = skiff_system(
        &helm,
        &sets(&[
            "networkPolicy.enable=false",
            "flowSchema.enable=false",
            "podDisruptionBudget.enable=false",
            "crd.enable=false",
            "metrics.enable=false",
        ]),
    );
    let switched = |o: &Value| {
        let name = o["metadata"]["name"].as_str().unwrap_or_default();
        [
            "NetworkPolicy",
            "FlowSchema",
            "PodDisruptionBudget",
            "CustomResourceDefinition",
            "Service",
        ]
        .contains(&o["kind"].as_str().unwrap_or_default())
            || name.starts_with("skiff-metrics")
    };
    let kept: Vec<String> = all
        .iter()
        .filter(|o| !switched(o))
        .map(object_key)
        .collect();
    let left: Vec<String> = off.iter().map(object_key).collect();
    assert_eq!(left, kept, "only the switched-off objects go");
    assert_eq!(
        all.len() - off.len(),
        9,
        "objects switched off (two CRDs among them)"
    );
    let args = container_args(find(&off, "Deployment", "skiff"));
    assert!(
        args.contains(&"--metrics-bind-address=0".to_owned()),
        "{args:?}"
    );
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn crd_is_kept_on_uninstall_unless_crd_keep_is_false() {
    require_e2e_binaries();
    let helm = Helm::new();
    let annotation = |objects: &[Value]| {
        find(objects, "CustomResourceDefinition", "mirrors.skiff.dev")["metadata"]["annotations"]
            [KEEP_ANNOTATION]
            .clone()
    };
    assert_eq!(annotation(&skiff_system::<&str>(&helm, &[])), "keep");
    assert_eq!(
        annotation(&skiff_system(&helm, &sets(&["crd.keep=false"]))),
        Value::Null
    );
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn the_schema_refuses_bad_values_and_names_them() {
    require_e2e_binaries();
    let helm = Helm::new();
    let chart = chart_dir().display().to_string();
    for (value, named) in [
        ("replicaCount=two", "replicaCount"),
        ("replicas=3", "replicas"),
        ("image.pullPolicy=Sometimes", "pullPolicy"),
        ("leaderElection.leaseDuration=fifteen", "leaseDuration"),
        ("leaderElection.qps=0", "qps"),
        ("metrics.enable=maybe", "enable"),
        ("secretTargetNames={App_TLS}", "secretTargetNames"),
        ("kinds={pods}", "kinds"),
        ("selfService.kinds={pods}", "kinds"),
        ("networkPolicy.enabled=false", "enabled"),
        (
            "selfService.projections={configmaps-as-secrets}",
            "projections",
        ),
        ("selfService.orphan=sometimes", "orphan"),
        ("fleet.hub.enable=yes", "enable"),
        ("fleet.hub.memberSilenceAfter=soon", "memberSilenceAfter"),
        ("fleet.hub.burst=0", "burst"),
        ("fleet.member.hubName=hub_", "hubName"),
        ("fleet.member.hubSecret=Hub_Secret", "hubSecret"),
        ("fleet.member.hubKinds={pods}", "hubKinds"),
        // A duration is a string: a bare number is refused, not read as nanoseconds.
        ("fleet.member.heartbeatPeriod=60", "heartbeatPeriod"),
        ("fleet.member.hubKubeconfig=/k", "hubKubeconfig"),
    ] {
        let stderr = helm.fails(&["template", "skiff", &chart, "--set", value]);
        assert!(
            stderr.contains("schema") && stderr.contains(named),
            "--set {value}: the error does not name {named}:\n{stderr}"
        );
    }
    // A parent chart may pass `global`; the schema lets it through.
    helm.ok(&[
        "template",
        "skiff",
        &chart,
        "--set",
        "global.registry=example",
    ]);
    let stderr = helm.fails(&[
        "template",
        "skiff",
        &chart,
        "--set",
        "sourceNamespaces={*}",
        "--set",
        "secretTargetNames={app-tls}",
    ]);
    assert!(stderr.contains("every Secret in the cluster"), "{stderr}");
    let rolebindings = "kinds={rolebindings.rbac.authorization.k8s.io}";
    let stderr = helm.fails(&["template", "skiff", &chart, "--set", rolebindings]);
    assert!(stderr.contains("bindableRoles go together"), "{stderr}");
    for (on, kinds, says) in [
        (
            "selfService.enable=true",
            "selfService.kinds={secrets}",
            "selfService.kinds names secrets, which needs secretTargetNames",
        ),
        (
            "selfService.enable=true",
            "selfService.kinds={limitranges}",
            "which kinds does not enable",
        ),
        (
            "selfService.enable=true",
            "selfService.projections={secrets-as-configmaps}",
            "selfService.projections names secrets-as-configmaps, which needs secretTargetNames",
        ),
        (
            "fleet.member.enable=true,fleet.member.hubName=hub-eu",
            "fleet.member.hubKinds={secrets}",
            "fleet.member.hubKinds names secrets, which needs secretTargetNames",
        ),
        (
            "fleet.member.enable=true,fleet.member.hubName=hub-eu",
            "fleet.member.hubKinds={configmaps,limitranges}",
            "fleet.member.hubKinds names limitranges, which kinds does not enable",
        ),
        (
            "fleet.member.enable=true",
            "fleet.member.hubKinds={configmaps}",
            "fleet.member.hubName is required with fleet.member.enable",
        ),
    ] {
        let stderr = helm.fails(&["template", "skiff", &chart, "--set", on, "--set", kinds]);
        assert!(stderr.contains(says), "--set {on} --set {kinds}:\n{stderr}");
    }
    let stderr = helm.fails(&[
        "template",
        "skiff",
        &chart,
        "--set",
        "prometheus.enable=true",
        "--set",
        "metrics.secure=false",
    ]);
    assert!(
        stderr.contains("prometheus.enable needs metrics.enable and metrics.secure"),
        "{stderr}"
    );
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn helm_lint_is_clean() {
    require_e2e_binaries();
    let chart = chart_dir().display().to_string();
    let output = Helm::new().ok(&["lint", "--strict", &chart]);
    say(&format!("helm lint --strict charts/skiff:\n{output}"));
    assert!(output.contains("0 chart(s) failed"), "{output}");
    assert!(
        !output.contains("[WARNING]") && !output.contains("[ERROR]"),
        "{output}"
    );
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn chart_image_and_installer_share_cargo_s_version() {
    require_e2e_binaries();
    let chart = std::fs::read_to_string(chart_dir().join("Chart.yaml")).expect("read Chart.yaml");
    let chart = parse_objects(&chart).remove(0);
    assert_eq!(
        (&chart["version"], &chart["appVersion"]),
        (&json!(VERSION), &json!(VERSION)),
        "{REGENERATE}"
    );
    let image = |objects: &[Value]| {
        find(objects, "Deployment", "skiff")["spec"]["template"]["spec"]["containers"][0]["image"]
            .clone()
    };
    let expected = json!(format!("skiff:{VERSION}"));
    assert_eq!(image(&skiff_system::<&str>(&Helm::new(), &[])), expected);
    assert_eq!(
        image(&installer()),
        expected,
        "make build-installer's default IMG"
    );
}

/// What the kustomize overlay `dir` builds, its Namespace aside: `helm install
/// --create-namespace` makes that one, so a chart has none to compare.
fn overlay_objects(dir: &str) -> Vec<Value> {
    kustomize(dir)
        .into_iter()
        .filter(|o| o["kind"] != "Namespace")
        .collect()
}
