//! The node of `make test-node`: a real kubelet, containerd and kube-proxy beside the control
//! plane, in namespaces of their own (`hack/node/node.sh`), where the node suite runs.
//!
//! Why: only a kubelet runs skiff as users do, from its image, in Pods, with probes, a memory
//! cgroup and SIGTERM on a rollout. These helpers read what the kubelet did: Pods and their
//! cgroups, the container's `/proc`, the kubelet's probe counters, and the Lease's holders as a
//! watch delivers them, timestamped on arrival.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode};
use serde_json::Value;

use super::control_plane::bin_dir;
use super::helm::Helm;
use super::kubectl::{Kubectl, output_ok, succeeded};
use super::skiff::TempDir;

/// The node `hack/node/node.sh` set up, from the variables it exports.
pub struct Node {
    pub name: String,
    /// skiff's image, as imported into containerd (`localhost/skiff:test`).
    pub image: String,
    pub kubeconfig: PathBuf,
    kubectl: Kubectl,
    _dir: TempDir,
}

impl Node {
    /// The node this test runs on; panics naming `make test-node` outside of it.
    pub fn from_env() -> Node {
        let var = |name: &str| {
            std::env::var(name).unwrap_or_else(|_| {
                panic!(
                    "{name} is not set: the node suite runs inside the node, via `make test-node`"
                )
            })
        };
        let kubeconfig = PathBuf::from(var("KUBECONFIG"));
        let dir = TempDir::new("node-kubectl");
        Node {
            name: var("NODE_NAME"),
            image: var("NODE_IMG"),
            kubectl: Kubectl::new(&kubeconfig, &dir.0),
            kubeconfig,
            _dir: dir,
        }
    }

    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl.run(args)
    }

    /// kubectl, which must succeed; its stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        self.kubectl.ok(args)
    }

    pub fn apply(&self, manifest: &str) -> String {
        self.kubectl.apply(manifest)
    }

    /// `kubectl create -f -` of `manifest`: one POST an object, where apply reads each first.
    pub fn create(&self, manifest: &str) -> String {
        let args = ["create", "-f", "-"];
        succeeded(&args, self.kubectl.run_with_stdin(&args, manifest))
    }

    /// `kubectl get ARGS -o json`, parsed.
    pub fn get(&self, args: &[&str]) -> Value {
        let args = [&["get"], args, &["-o", "json"]].concat();
        let out = self.kubectl_ok(&args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("kubectl {args:?}: {e}: {out}"))
    }

    /// `make ARGS` in the repository as the node's admin, which must succeed; its stdout.
    pub fn make(&self, args: &[&str]) -> String {
        let output = Command::new("make")
            .args(args)
            .arg(format!("KUBECTL={}", bin_dir().join("kubectl").display()))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("KUBECONFIG", &self.kubeconfig)
            .stdin(Stdio::null())
            .output()
            .expect("run make");
        output_ok(&format!("make {}", args.join(" ")), output)
    }

    pub fn helm(&self) -> Helm {
        Helm::with_kubeconfig(&self.kubeconfig)
    }

    /// The Pods of `namespace` matching `selector`, not being deleted.
    pub fn pods(&self, namespace: &str, selector: &str) -> Vec<Value> {
        let list = self.get(&["pods", "-n", namespace, "-l", selector]);
        let items = list["items"].as_array().cloned().unwrap_or_default();
        items
            .into_iter()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .collect()
    }

    /// The kubelet's `prober_probe_total` samples with `result="failed"` for the Pods named
    /// `pods` in `namespace`, summed.
    pub fn failed_probes(&self, namespace: &str, pods: &[String]) -> u64 {
        let path = format!("/api/v1/nodes/{}/proxy/metrics/probes", self.name);
        let text = self.kubectl_ok(&["get", "--raw", &path]);
        let namespace = format!("namespace=\"{namespace}\"");
        let ours = |l: &&str| pods.iter().any(|p| l.contains(&format!("pod=\"{p}\"")));
        text.lines()
            .filter(|l| l.starts_with("prober_probe_total{") && l.contains(&namespace))
            .filter(|l| l.contains("result=\"failed\"") && ours(l))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as u64
    }

    /// The `Unhealthy` events (failed probes, as `kubectl describe` shows them) of the Pods
    /// named `pods` in `namespace`.
    pub fn unhealthy_events(&self, namespace: &str, pods: &[String]) -> Vec<String> {
        let events = self.get(&[
            "events",
            "-n",
            namespace,
            "--field-selector=reason=Unhealthy",
        ]);
        let items = events["items"].as_array().cloned().unwrap_or_default();
        items
            .iter()
            .filter(|e| {
                pods.iter()
                    .any(|p| e["involvedObject"]["name"] == p.as_str())
            })
            .map(|e| format!("{}: {}", e["involvedObject"]["name"], e["message"]))
            .collect()
    }
}

/// The cgroup directory of a Pod's first container in the v1 hierarchy `controller` (the
/// kubelet's cgroupfs layout under the node's cgroup root), or the unified one on cgroup v2.
pub fn container_cgroup(pod: &Value, controller: &str) -> PathBuf {
    let uid = pod["metadata"]["uid"].as_str().expect("pod uid");
    let qos = pod["status"]["qosClass"]
        .as_str()
        .expect("qosClass")
        .to_lowercase();
    let id = pod["status"]["containerStatuses"][0]["containerID"]
        .as_str()
        .and_then(|id| id.rsplit_once("://"))
        .map(|(_, id)| id)
        .expect("a started container");
    let qos_dir = if qos == "guaranteed" {
        String::new()
    } else {
        format!("/{qos}")
    };
    let v1 = Path::new("/sys/fs/cgroup").join(controller);
    let base = if v1.join("cgroup.procs").exists() {
        v1
    } else {
        PathBuf::from("/sys/fs/cgroup")
    };
    base.join(format!("skiff-node/kubepods{qos_dir}/pod{uid}/{id}"))
}

/// A number from a cgroup file, or one `key value` line of it.
pub fn cgroup_value(dir: &Path, file: &str, key: Option<&str>) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join(file)).ok()?;
    match key {
        None => text.trim().parse().ok(),
        Some(key) => text
            .lines()
            .find_map(|l| l.strip_prefix(key)?.trim().parse().ok()),
    }
}

/// Memory of a container's cgroup: (current, peak, OOM kills), cgroup v1 or v2 file names.
pub fn container_memory(pod: &Value) -> (u64, u64, u64) {
    let dir = container_cgroup(pod, "memory");
    let v1 = dir.join("memory.usage_in_bytes").exists();
    let read = |file, key| {
        cgroup_value(&dir, file, key)
            .unwrap_or_else(|| panic!("read {} in {}", file, dir.display()))
    };
    if v1 {
        (
            read("memory.usage_in_bytes", None),
            read("memory.max_usage_in_bytes", None),
            read("memory.oom_control", Some("oom_kill ")),
        )
    } else {
        (
            read("memory.current", None),
            read("memory.peak", None),
            read("memory.events", Some("oom_kill ")),
        )
    }
}

/// The main process of a Pod's first container, as this PID namespace numbers it.
pub fn container_pid(pod: &Value) -> u32 {
    let dir = container_cgroup(pod, "pids");
    let procs = std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_else(|e| panic!("read {}/cgroup.procs: {e}", dir.display()));
    let mut pids: Vec<u32> = procs.lines().filter_map(|l| l.parse().ok()).collect();
    pids.sort_unstable();
    *pids
        .first()
        .unwrap_or_else(|| panic!("no process in {}", dir.display()))
}

/// The Lease's holder, every time a watch delivers the Lease, stamped when it arrived.
pub struct LeaseWatch {
    seen: Arc<Mutex<Vec<(Instant, String)>>>,
    child: Child,
}

impl LeaseWatch {
    pub fn start(node: &Node, namespace: &str, name: &str) -> LeaseWatch {
        let mut child = Command::new(bin_dir().join("kubectl"))
            .arg("--kubeconfig")
            .arg(&node.kubeconfig)
            .args(["get", "lease", name, "-n", namespace, "--watch"])
            .arg("--output=jsonpath={.spec.holderIdentity}{\"\\n\"}")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start kubectl get lease --watch");
        let stdout = child.stdout.take().expect("stdout is piped");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let now = Instant::now();
                sink.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((now, line));
            }
        });
        LeaseWatch { seen, child }
    }

    pub fn seen(&self) -> Vec<(Instant, String)> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The first holder seen at or after `since` that `wanted` accepts, with when it was seen.
    pub fn wait_for(
        &self,
        since: Instant,
        timeout: Duration,
        wanted: impl Fn(&str) -> bool,
    ) -> (Instant, String) {
        let deadline = Instant::now() + timeout;
        loop {
            let found = self
                .seen()
                .into_iter()
                .find(|(at, h)| *at >= since && wanted(h));
            if let Some(found) = found {
                return found;
            }
            let last = self.seen().last().map(|(_, h)| h.clone());
            assert!(
                Instant::now() < deadline,
                "no wanted Lease holder within {timeout:?}; last seen {last:?}"
            );
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// The holder seen last, empty while none is known.
    pub fn holder(&self) -> String {
        self.seen()
            .last()
            .map(|(_, h)| h.clone())
            .unwrap_or_default()
    }
}

impl Drop for LeaseWatch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Handovers among `seen` holders (a new non-empty holder after another one) and the longest
/// time the Lease was seen with no holder (released, not yet taken).
pub fn handovers(seen: &[(Instant, String)]) -> (usize, Duration) {
    let mut count = 0;
    let mut longest = Duration::ZERO;
    let mut last_holder: Option<&str> = None;
    let mut released: Option<Instant> = None;
    for (at, holder) in seen {
        if holder.is_empty() {
            released.get_or_insert(*at);
            continue;
        }
        if let Some(since) = released.take() {
            longest = longest.max(at.duration_since(since));
        }
        if last_holder.is_some_and(|last| last != holder) {
            count += 1;
        }
        last_holder = Some(holder);
    }
    (count, longest)
}

/// The Pod name in a leader-election identity (`<pod>_<suffix>`).
pub fn pod_of(identity: &str) -> &str {
    identity.rsplit_once('_').map_or(identity, |(pod, _)| pod)
}

/// One HTTP/1.1 GET over TLS to `host:port` without verifying the server (skiff's metrics
/// certificate is self-signed); (status, body).
pub fn https_get_unverified(
    host: &str,
    port: u16,
    path: &str,
    token: Option<&str>,
) -> std::io::Result<(u16, String)> {
    let mut builder =
        SslConnector::builder(SslMethod::tls_client()).map_err(std::io::Error::other)?;
    builder.set_verify(SslVerifyMode::NONE);
    let tcp = TcpStream::connect((host, port))?;
    tcp.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut tls = builder
        .build()
        .configure()
        .map_err(std::io::Error::other)?
        .verify_hostname(false)
        .connect(host, tcp)
        .map_err(std::io::Error::other)?;
    let authorization = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{authorization}Connection: close\r\n\r\n");
    tls.write_all(request.as_bytes())?;
    let mut raw = Vec::new();
    let _ = tls.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no HTTP status in {text:?}")))?;
    Ok((status, text))
}

/// Median and maximum of `durations` (which must not be empty).
pub fn median_max(durations: &[Duration]) -> (Duration, Duration) {
    let mut sorted = durations.to_vec();
    sorted.sort();
    (sorted[sorted.len() / 2], sorted[sorted.len() - 1])
}
