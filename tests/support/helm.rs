//! Helm for the chart tests: `bin/helm`, built from Go modules by `testbin/` like kubectl, with
//! its config, cache and data in a temp dir of its own (never the user's).
//!
//! Why: the chart is what Helm users install, so it is rendered, linted, installed, upgraded
//! and uninstalled by the real Helm (v4), not by a template engine of the tests' own.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use super::control_plane::bin_dir;
use super::kubectl::output_ok;
use super::skiff::TempDir;

/// The chart's directory in the repository.
pub fn chart_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("charts/skiff")
}

/// `bin/helm`, optionally against a cluster (`--kubeconfig`).
pub struct Helm {
    home: TempDir,
    kubeconfig: Option<PathBuf>,
}

impl Helm {
    /// Helm without a cluster (template, lint, package). Panics naming the fix if it is missing.
    pub fn new() -> Helm {
        let binary = bin_dir().join("helm");
        assert!(
            binary.is_file(),
            "{} is missing; run `make testbin` to build it",
            binary.display()
        );
        Helm {
            home: TempDir::new("helm-home"),
            kubeconfig: None,
        }
    }

    /// Helm against the cluster of `kubeconfig`.
    pub fn with_kubeconfig(kubeconfig: &Path) -> Helm {
        Helm {
            kubeconfig: Some(kubeconfig.to_owned()),
            ..Helm::new()
        }
    }

    /// Runs helm with `args`, whatever its outcome.
    pub fn run(&self, args: &[&str]) -> Output {
        let mut command = Command::new(bin_dir().join("helm"));
        for (variable, dir) in [
            ("HELM_CONFIG_HOME", "config"),
            ("HELM_CACHE_HOME", "cache"),
            ("HELM_DATA_HOME", "data"),
        ] {
            command.env(variable, self.home.0.join(dir));
        }
        if let Some(kubeconfig) = &self.kubeconfig {
            command.arg("--kubeconfig").arg(kubeconfig);
        }
        command
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("run helm {}: {e}", args.join(" ")))
    }

    /// Runs helm; panics with its stderr unless it succeeds; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        output_ok(&format!("helm {}", args.join(" ")), self.run(args))
    }

    /// Runs helm expecting it to fail; returns its stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            !output.status.success(),
            "helm {} succeeded, expected a failure:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stdout)
        );
        String::from_utf8_lossy(&output.stderr).into_owned()
    }

    /// `helm template RELEASE charts/skiff -n NAMESPACE EXTRA...`, parsed: one JSON value per
    /// object.
    pub fn template(&self, release: &str, namespace: &str, extra: &[&str]) -> Vec<Value> {
        let chart = chart_dir().display().to_string();
        let mut args = vec!["template", release, &chart, "--namespace", namespace];
        args.extend_from_slice(extra);
        parse_objects(&self.ok(&args))
    }
}

/// The objects of a multi-document YAML stream, as JSON values (empty documents dropped), read by
/// `bin/yaml2json` (testbin/helm: the YAML reader Kubernetes uses).
pub fn parse_objects(yaml: &str) -> Vec<Value> {
    let mut child = Command::new(bin_dir().join("yaml2json"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run bin/yaml2json ({e}); run `make testbin` to build it"));
    let mut stdin = child.stdin.take().expect("stdin is piped");
    stdin
        .write_all(yaml.as_bytes())
        .expect("write to yaml2json");
    drop(stdin);
    let output = child.wait_with_output().expect("wait for yaml2json");
    let json = output_ok("yaml2json", output);
    let documents: Value = serde_json::from_str(&json).expect("yaml2json writes JSON");
    match documents {
        Value::Array(documents) => documents,
        other => panic!("yaml2json wrote {other}, not an array"),
    }
}

/// `Kind/namespace/name` of an object (namespace empty when cluster-scoped).
pub fn object_key(object: &Value) -> String {
    let meta = &object["metadata"];
    format!(
        "{}/{}/{}",
        object["kind"].as_str().unwrap_or_default(),
        meta["namespace"].as_str().unwrap_or_default(),
        meta["name"].as_str().unwrap_or_default()
    )
}

/// The object of `kind` named `name` among `objects`; panics listing them if there is none.
pub fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| {
            let keys: Vec<String> = objects.iter().map(object_key).collect();
            panic!("no {kind}/{name} among {keys:?}")
        })
}

/// The skiff container's args in a Deployment.
pub fn container_args(deployment: &Value) -> Vec<String> {
    let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap_or_else(|| panic!("the Deployment's container has no args: {deployment}"));
    args.iter()
        .map(|arg| arg.as_str().unwrap_or_default().to_owned())
        .collect()
}
