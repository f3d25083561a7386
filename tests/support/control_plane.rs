//! A real control plane (etcd + kube-apiserver) for the e2e suites.
//!
//! Why: only the real API server proves that the CRD schema, the shipped RBAC and API Priority
//! and Fairness behave as skiff expects. The binaries come from `testbin/` (`make testbin`).
//! RBAC is enforced for real: the admin token is in `system:masters`, the operator token is the
//! skiff ServiceAccount's and gets only what `manifests/rbac.yaml` grants.
//!
//! Lifecycle: see `watchdog.rs`; nothing outlives the test binary by more than a second, and
//! `Drop` removes the temp dir (the watchdog does when the test process dies first).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine as _;

use super::kubectl::{Kubectl, RawResponse, https_get, https_get_accepting};
use super::ports::free_ports;
use super::watchdog::Supervised;

/// How long kube-apiserver may take to answer `/readyz` 200; it takes about 3 s on an idle
/// 2-core machine, far more when the machine is busy compiling.
pub const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// Pause between `/readyz` polls.
const READY_POLL: Duration = Duration::from_millis(100);
/// Free ports are picked by binding port 0 and releasing it, so another process may take one
/// before etcd or kube-apiserver binds it: start again on fresh ports this many times.
const START_ATTEMPTS: usize = 3;
/// The issuer a real cluster uses; tokens are static here, so it is only a required value.
const SERVICE_ACCOUNT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// The operator's identity, as the ServiceAccount in `manifests/serviceaccount.yaml`.
pub const OPERATOR_USER: &str = "system:serviceaccount:skiff-system:skiff";
/// The uids of the operator's two tokens (same ServiceAccount): the audit log tells the
/// replicas that use them apart.
pub const OPERATOR_UID: &str = "skiff-uid";
pub const OPERATOR_B_UID: &str = "skiff-b-uid";
pub const OPERATOR_NAMESPACE: &str = "skiff-system";
/// Set to `1` to skip the e2e tests on a machine without the testbin binaries (each test says so).
pub const SKIP_VARIABLE: &str = "SKIFF_SKIP_E2E";

/// Flags of a skiff replica in the e2e suites: the operator's Lease in skiff-system, with short
/// lease timings so a replica killed by a failed test lets the next one lead within 4 s.
pub const E2E_REPLICA_FLAGS: [&str; 7] = [
    "--leader-elect",
    "--leader-election-namespace=skiff-system",
    "--source-namespaces=skiff-system",
    "--leader-elect-lease-duration=4s",
    "--leader-elect-renew-deadline=3s",
    "--leader-elect-retry-period=1s",
    "--log-level=debug",
];

/// The repository's `bin/`, where `make testbin` puts etcd, kube-apiserver and kubectl.
pub fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("bin")
}

/// The repository's `manifests/` (kustomize root).
pub fn manifests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests")
}

/// Whether this build runs the e2e suite: `SKIFF_SKIP_E2E=1` at build time (see `build.rs`)
/// marks every e2e test ignored, so a skipped test is reported as ignored, never as passed.
/// For benches, which decide at run time; tests carry `#[cfg_attr(skip_e2e, ignore)]`.
pub fn e2e_enabled() -> bool {
    if cfg!(skip_e2e) {
        say(&format!(
            "skipped: the real control plane ({SKIP_VARIABLE}=1 at build time)"
        ));
        return false;
    }
    require_e2e_binaries();
    true
}

/// Fails, naming the fix, when the control plane's binaries are missing: an e2e test that
/// cannot run is a failure, not a pass.
pub fn require_e2e_binaries() {
    let missing: Vec<String> = ["etcd", "kube-apiserver", "kubectl"]
        .iter()
        .map(|name| bin_dir().join(name))
        .filter(|path| !path.is_file())
        .map(|path| path.display().to_string())
        .collect();
    let test = std::thread::current()
        .name()
        .unwrap_or("e2e test")
        .to_owned();
    assert!(
        missing.is_empty(),
        "{test}: missing {}; run `make testbin` to build the control plane \
         (or build with {SKIP_VARIABLE}=1 to mark the e2e tests ignored)",
        missing.join(", ")
    );
}

/// etcd and kube-apiserver on loopback ports, with kubeconfigs for the admin and the operator.
pub struct ControlPlane {
    // Field order is drop order: the API server goes before its storage.
    apiserver: Supervised,
    etcd: Supervised,
    dir: PathBuf,
    url: String,
    ca_pem: String,
    admin_token: String,
    operator_token: String,
    operator_b_token: String,
    /// Set once `manifests/` has been applied (see [`ControlPlane::install_manifests`]).
    manifests: OnceLock<()>,
    /// What [`ControlPlane::once`] has done: `deploy/` overlays and suites' cluster-wide set-up.
    done_once: Mutex<BTreeSet<&'static str>>,
}

impl ControlPlane {
    /// The calling suite's control plane, started on first use; the suite's tests share it,
    /// each in its own namespaces (one suite at a time in a process: `super::suites`). Its
    /// processes die with the test process.
    pub fn shared() -> &'static ControlPlane {
        super::suites::control_plane(ControlPlane::start)
    }

    /// A control plane of one's own, stopped and removed on drop.
    pub fn start() -> ControlPlane {
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("skiff-cp-{}-{n}", std::process::id()));
        let mut failures = Vec::new();
        for attempt in 1..=START_ATTEMPTS {
            match Self::start_in(&dir) {
                Ok(control_plane) => return control_plane,
                Err(failure) => {
                    say(&format!(
                        "control plane: attempt {attempt} failed: {failure}"
                    ));
                    failures.push(failure);
                }
            }
        }
        let _ = fs::remove_dir_all(&dir);
        panic!("control plane did not start:\n{}", failures.join("\n---\n"));
    }

    fn start_in(dir: &Path) -> Result<ControlPlane, String> {
        let _ = fs::remove_dir_all(dir);
        fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let admin_token = random_token();
        let operator_token = random_token();
        let operator_b_token = random_token();
        write_credentials(dir, &admin_token, &operator_token, &operator_b_token)?;
        write(&dir.join("audit-policy.yaml"), super::audit::POLICY)?;
        let [etcd_client, etcd_peer, secure] = free_ports()?;
        let started = Instant::now();
        let mut etcd = Supervised::spawn(
            "etcd",
            dir,
            &etcd_args(dir, etcd_client, etcd_peer),
            Some(dir),
        )?;
        let etcd_url = format!("http://127.0.0.1:{etcd_client}");
        let mut apiserver = Supervised::spawn(
            "kube-apiserver",
            dir,
            &apiserver_args(dir, &etcd_url, secure),
            None,
        )?;
        let url = format!("https://127.0.0.1:{secure}");
        let ca_pem = wait_ready(dir, &url, &admin_token, &mut [&mut etcd, &mut apiserver])?;
        say(&format!(
            "control plane: ready in {:.1} s at {url} ({})",
            started.elapsed().as_secs_f64(),
            dir.display()
        ));
        let control_plane = ControlPlane {
            apiserver,
            etcd,
            dir: dir.to_owned(),
            url,
            ca_pem,
            admin_token,
            operator_token,
            operator_b_token,
            manifests: OnceLock::new(),
            done_once: Mutex::default(),
        };
        control_plane.write_kubeconfigs()?;
        Ok(control_plane)
    }

    /// Stops the API server, then its storage, and removes the directory.
    pub fn stop(&self) {
        self.apiserver.kill();
        self.etcd.kill();
        let _ = fs::remove_dir_all(&self.dir);
    }

    /// The shared control plane with `manifests/` applied: what most e2e suites start from.
    pub fn installed() -> &'static ControlPlane {
        ControlPlane::shared().install_manifests()
    }

    /// `kubectl apply -k manifests/` (once per control plane; later calls return at once), then
    /// waits until every CRD of `manifests/crd.yaml` (Mirror and MirrorAcceptance) is
    /// Established ([`Self::wait_skiff_crds`]), so a test may create either at once. Panics
    /// unless both succeed.
    pub fn install_manifests(&self) -> &Self {
        self.manifests.get_or_init(|| {
            let manifests = manifests_dir().display().to_string();
            self.kubectl_ok(&["apply", "-k", &manifests]);
            self.wait_skiff_crds();
        });
        self
    }

    /// Waits until every CRD of `manifests/crd.yaml` (Mirror and MirrorAcceptance) is
    /// Established, as after `make install` or a chart's install; see [`Self::wait_established`].
    pub fn wait_skiff_crds(&self) {
        let crds = manifests_dir().join("crd.yaml").display().to_string();
        self.wait_established(&["-f", &crds]);
    }

    /// Waits until the CRDs `selection` names (kubectl's selection: `-f <file>`, or
    /// `customresourcedefinition/<name>`...) are Established, so a test may create their
    /// objects at once; panics if one is not. Under load a CRD takes seconds to be served, so
    /// the wait is a liveness bound, [`READY_TIMEOUT`], as for the API server's own start.
    pub fn wait_established(&self, selection: &[&str]) {
        let timeout = format!("--timeout={}s", READY_TIMEOUT.as_secs());
        let mut args = vec!["wait", "--for=condition=Established"];
        args.extend_from_slice(selection);
        args.push(&timeout);
        self.kubectl_ok(&args);
    }

    /// `kubectl apply -k deploy/<overlay>` once per control plane (later calls, from any test
    /// of the suite, return once it is applied). Once per control plane, not per process: a
    /// process runs suites one after another, each on a control plane of its own.
    pub fn install_overlay(&self, overlay: &'static str) -> &Self {
        self.once(overlay, |cp| {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("deploy")
                .join(overlay);
            cp.kubectl_ok(&["apply", "-k", &dir.display().to_string()]);
        })
    }

    /// Runs `set_up` once per control plane under the name `what`: tests of a suite run in
    /// parallel, and two `kubectl apply`s creating one cluster-wide object race (AlreadyExists).
    /// Later calls wait for the first to finish.
    pub fn once(&self, what: &'static str, set_up: impl FnOnce(&Self)) -> &Self {
        let mut done = self
            .done_once
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !done.contains(what) {
            set_up(self);
            done.insert(what);
        }
        self
    }

    /// The kube-apiserver's process id, to read its memory from `/proc`.
    pub fn apiserver_pid(&self) -> Option<u32> {
        self.apiserver.program_id()
    }

    /// `https://127.0.0.1:<port>`
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The self-signed CA that signed the API server's serving certificate (one PEM block).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The temp dir holding data, logs (`etcd.log`, `kube-apiserver.log`) and kubeconfigs.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// User `admin` in group `system:masters`; namespace `default`.
    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.dir.join("admin.kubeconfig")
    }

    /// The skiff ServiceAccount's token; namespace `skiff-system`.
    pub fn operator_kubeconfig(&self) -> PathBuf {
        self.dir.join("operator.kubeconfig")
    }

    /// A kubeconfig for the operator's second token (uid [`OPERATOR_B_UID`]), for a second
    /// replica the audit log must tell apart from the first.
    pub fn operator_b_kubeconfig(&self) -> PathBuf {
        self.dir.join("operator-b.kubeconfig")
    }

    /// Every audited request of the operator's tokens so far.
    pub fn audit(&self) -> Vec<super::audit::AuditEvent> {
        super::audit::read(&self.dir.join("audit.log"))
    }

    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    pub fn operator_token(&self) -> &str {
        &self.operator_token
    }

    /// The operator's second token (uid [`OPERATOR_B_UID`]).
    pub fn operator_b_token(&self) -> &str {
        &self.operator_b_token
    }

    /// kubectl as the admin.
    pub fn admin(&self) -> Kubectl {
        Kubectl::new(&self.admin_kubeconfig(), &self.dir)
    }

    /// kubectl as the operator's ServiceAccount.
    pub fn operator(&self) -> Kubectl {
        Kubectl::new(&self.operator_kubeconfig(), &self.dir)
    }

    /// `kubectl --kubeconfig admin.kubeconfig ARGS`, whatever its outcome.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.admin().run(args)
    }

    /// As [`Self::kubectl`]; panics with stderr unless it succeeds; returns stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        self.admin().ok(args)
    }

    /// `kubectl get ARGS -o json` as the admin, parsed; None if it fails (e.g. NotFound).
    pub fn get_json(&self, args: &[&str]) -> Option<serde_json::Value> {
        let mut all = vec!["get"];
        all.extend(args);
        all.extend(["-o", "json"]);
        let output = self.kubectl(&all);
        if !output.status.success() {
            return None;
        }
        serde_json::from_slice(&output.stdout).ok()
    }

    /// The object `kind`/`name` in `namespace`, as the admin sees it; None if there is none.
    pub fn object(&self, kind: &str, namespace: &str, name: &str) -> Option<serde_json::Value> {
        self.get_json(&[kind, name, "-n", namespace])
    }

    /// As [`Self::kubectl`] with `stdin` piped in (for `apply -f -`).
    pub fn kubectl_stdin(&self, args: &[&str], stdin: &str) -> Output {
        self.admin().run_with_stdin(args, stdin)
    }

    /// `kubectl apply -f -` of `manifest` as the admin; panics unless it succeeds.
    pub fn apply(&self, manifest: &str) -> String {
        self.admin().apply(manifest)
    }

    /// `kubectl --kubeconfig operator.kubeconfig ARGS`, whatever its outcome.
    pub fn kubectl_as_operator(&self, args: &[&str]) -> Output {
        self.operator().run(args)
    }

    /// Creates a namespace named `<prefix>-<n>`, unique in this process, with `labels`.
    pub fn create_namespace(&self, prefix: &str, labels: &[(&str, &str)]) -> String {
        let mut created = self.create_namespaces(prefix, labels, 1);
        created.remove(0)
    }

    /// Creates `count` namespaces as [`ControlPlane::create_namespace`] does, all in one `kubectl
    /// apply` rather than one kubectl run each.
    pub fn create_namespaces(
        &self,
        prefix: &str,
        labels: &[(&str, &str)],
        count: usize,
    ) -> Vec<String> {
        static CREATED: AtomicUsize = AtomicUsize::new(0);
        let first = CREATED.fetch_add(count, Ordering::Relaxed);
        let names: Vec<String> = (first..first + count)
            .map(|n| format!("{prefix}-{n}"))
            .collect();
        let labels: serde_json::Map<String, serde_json::Value> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).into()))
            .collect();
        let items: Vec<serde_json::Value> = names
            .iter()
            .map(|name| {
                serde_json::json!({
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": name, "labels": labels},
                })
            })
            .collect();
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
        self.apply(&list.to_string());
        names
    }

    /// A GET with a bearer token, returning status, headers and body (kubectl hides headers).
    pub fn raw_get(&self, path: &str, token: &str) -> RawResponse {
        https_get(&self.url, &self.ca_pem, path, Some(token))
            .unwrap_or_else(|e| panic!("GET {}{path}: {e}", self.url))
    }

    /// The list at `path` as the admin, metadata only (`PartialObjectMetadataList`): counting
    /// or versioning big objects without fetching them.
    pub fn metadata_list(&self, path: &str) -> serde_json::Value {
        const ACCEPT: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
        let response = https_get_accepting(
            &self.url,
            &self.ca_pem,
            path,
            Some(&self.admin_token),
            ACCEPT,
        )
        .unwrap_or_else(|e| panic!("GET {}{path}: {e}", self.url));
        assert_eq!(response.status, 200, "GET {path}: {}", response.body);
        serde_json::from_str(&response.body)
            .unwrap_or_else(|e| panic!("GET {path}: not JSON ({e}): {}", response.body))
    }

    fn write_kubeconfigs(&self) -> Result<(), String> {
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        let admin = kubeconfig(&self.url, &ca, "admin", &self.admin_token, "default");
        let operator = kubeconfig(
            &self.url,
            &ca,
            "skiff",
            &self.operator_token,
            OPERATOR_NAMESPACE,
        );
        let operator_b = kubeconfig(
            &self.url,
            &ca,
            "skiff",
            &self.operator_b_token,
            OPERATOR_NAMESPACE,
        );
        write(&self.admin_kubeconfig(), &admin)?;
        write(&self.operator_b_kubeconfig(), &operator_b)?;
        write(&self.operator_kubeconfig(), &operator)
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.stop();
    }
}

fn etcd_args(dir: &Path, client: u16, peer: u16) -> Vec<String> {
    let client_url = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    vec![
        "--name=default".into(),
        format!("--data-dir={}", dir.join("etcd").display()),
        format!("--listen-client-urls={client_url}"),
        format!("--advertise-client-urls={client_url}"),
        format!("--listen-peer-urls={peer_url}"),
        format!("--initial-advertise-peer-urls={peer_url}"),
        format!("--initial-cluster=default={peer_url}"),
        // Test data is thrown away: no fsync makes writes fast on a busy disk.
        "--unsafe-no-fsync=true".into(),
        "--log-level=warn".into(),
    ]
}

fn apiserver_args(dir: &Path, etcd_url: &str, secure_port: u16) -> Vec<String> {
    let key = dir.join("service-account.key").display().to_string();
    vec![
        format!("--etcd-servers={etcd_url}"),
        "--bind-address=127.0.0.1".into(),
        "--advertise-address=127.0.0.1".into(),
        format!("--secure-port={secure_port}"),
        format!("--cert-dir={}", dir.join("certs").display()),
        "--authorization-mode=RBAC".into(),
        format!("--token-auth-file={}", dir.join("tokens.csv").display()),
        format!("--service-account-issuer={SERVICE_ACCOUNT_ISSUER}"),
        format!("--service-account-key-file={key}"),
        format!("--service-account-signing-key-file={key}"),
        // Only a configuration value: there is no kube-proxy and no Service traffic.
        "--service-cluster-ip-range=10.0.0.0/24".into(),
        // It would wait for token controllers that need kube-controller-manager.
        "--disable-admission-plugins=ServiceAccount".into(),
        "--enable-priority-and-fairness=true".into(),
        "--profiling=false".into(),
        format!(
            "--audit-policy-file={}",
            dir.join("audit-policy.yaml").display()
        ),
        format!("--audit-log-path={}", dir.join("audit.log").display()),
    ]
}

/// The token file (`token,user,uid,"group,group"`) and the ServiceAccount signing key.
fn write_credentials(
    dir: &Path,
    admin_token: &str,
    operator_token: &str,
    operator_b_token: &str,
) -> Result<(), String> {
    let groups = format!("\"system:serviceaccounts,system:serviceaccounts:{OPERATOR_NAMESPACE}\"");
    let tokens = format!(
        "{admin_token},admin,admin-uid,\"system:masters\"\n\
         {operator_token},{OPERATOR_USER},{OPERATOR_UID},{groups}\n\
         {operator_b_token},{OPERATOR_USER},{OPERATOR_B_UID},{groups}\n"
    );
    write(&dir.join("tokens.csv"), &tokens)?;
    let key = openssl::rsa::Rsa::generate(2048)
        .and_then(|rsa| rsa.private_key_to_pem())
        .map_err(|e| format!("generate service account key: {e}"))?;
    fs::write(dir.join("service-account.key"), key).map_err(|e| format!("write key: {e}"))
}

/// Polls `/readyz` until it answers 200; returns the serving CA, which exists once the server
/// listens.
fn wait_ready(
    dir: &Path,
    url: &str,
    token: &str,
    processes: &mut [&mut Supervised],
) -> Result<String, String> {
    let deadline = Instant::now() + READY_TIMEOUT;
    let mut last = String::from("no answer yet");
    while Instant::now() < deadline {
        for process in processes.iter_mut() {
            process.check_running()?;
        }
        match probe_readyz(dir, url, token) {
            Ok(ca) => return Ok(ca),
            Err(why) => last = why,
        }
        std::thread::sleep(READY_POLL);
    }
    Err(format!(
        "/readyz not 200 after {READY_TIMEOUT:?}; last: {last}"
    ))
}

/// The serving CA once `/readyz` answers 200; else why not.
fn probe_readyz(dir: &Path, url: &str, token: &str) -> Result<String, String> {
    let ca = read_serving_ca(dir)?;
    let response = https_get(url, &ca, "/readyz", Some(token)).map_err(|e| e.to_string())?;
    match response.status {
        200 => Ok(ca),
        status => Err(format!("{status} {}", response.body)),
    }
}

/// kube-apiserver's `--cert-dir` holds the serving certificate followed by the self-signed CA.
fn read_serving_ca(dir: &Path) -> Result<String, String> {
    let path = dir.join("certs").join("apiserver.crt");
    let pem = fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let certs = openssl::x509::X509::stack_from_pem(&pem).map_err(|e| format!("{e}"))?;
    let self_signed = certs.iter().find(|cert| {
        matches!(
            cert.subject_name().try_cmp(cert.issuer_name()),
            Ok(std::cmp::Ordering::Equal)
        )
    });
    let ca = self_signed.ok_or_else(|| format!("no self-signed CA in {}", path.display()))?;
    let ca_pem = ca.to_pem().map_err(|e| format!("{e}"))?;
    String::from_utf8(ca_pem).map_err(|e| format!("{e}"))
}

fn kubeconfig(url: &str, ca_data: &str, user: &str, token: &str, namespace: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\n\
         clusters:\n- name: skiff-e2e\n  cluster:\n    server: {url}\n    certificate-authority-data: {ca_data}\n\
         users:\n- name: {user}\n  user:\n    token: {token}\n\
         contexts:\n- name: {user}\n  context:\n    cluster: skiff-e2e\n    user: {user}\n    namespace: {namespace}\n\
         current-context: {user}\n"
    )
}

fn random_token() -> String {
    let mut bytes = [0u8; 24];
    openssl::rand::rand_bytes(&mut bytes).expect("the OpenSSL RNG works");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes a line to stderr past the test harness's output capture, so it shows on success too.
pub fn say(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn write(path: &Path, contents: &str) -> Result<(), String> {
    fs::write(path, contents).map_err(|e| format!("write {}: {e}", path.display()))
}
