//! Command-line flags: kubebuilder's names and defaults, validated into typed [`Settings`].
//!
//! Operators are configured from manifests written for controller-runtime, so skiff takes the
//! same flag names, Go duration syntax and `--flag=value` forms (see [`argv`]). Every check
//! happens here, at start, and an error names the flag, the value and what would be accepted.

mod argv;
mod hearing;
mod fleet;
mod self_service;
mod summary;
#[cfg(test)]
mod testing;
mod validate;

use std::fmt;
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::Duration;

use argh::FromArgs;
use log::LevelFilter;

use crate::duration::parse_duration;
use crate::kind::Kinds;
use crate::kube::impersonate::Overrides;
use crate::leader::{Timing, timing};
use crate::log::{LogFormat, parse_level};

pub use argv::parse_bool;
pub use fleet::{FleetHub, HubMember};
pub use hearing::{DEFAULT_DEAFNESS_TIMEOUT, DEFAULT_WATCH_IDLE_TIMEOUT, Hearing};
pub use self_service::{
    DEFAULT_MAX_COPIES_PER_TENANT_MIRROR, DEFAULT_OFFER_NAMESPACE_SELECTOR,
    DEFAULT_SELF_SERVICE_KINDS, SelfService,
};

/// Main client QPS and burst: the client's own defaults (kubebuilder's).
pub use crate::kube::config::{
    DEFAULT_BURST as DEFAULT_KUBE_API_BURST, DEFAULT_QPS as DEFAULT_KUBE_API_QPS,
};
/// Lease name: skiff's own.
pub const DEFAULT_LEADER_ELECTION_ID: &str = "skiff-leader";
/// Lease client QPS: skiff's own budget for a few lease requests per retry period.
pub const DEFAULT_LEADER_ELECT_QPS: f32 = 5.0;
/// Lease client burst: skiff's own.
pub const DEFAULT_LEADER_ELECT_BURST: u32 = 10;
/// Probe address: kubebuilder's scaffold.
pub const DEFAULT_HEALTH_PROBE_BIND_ADDRESS: &str = ":8081";
/// Metrics address: kubebuilder's scaffold since v4, HTTPS (`0` disables).
pub const DEFAULT_METRICS_BIND_ADDRESS: &str = ":8443";
/// Graceful shutdown timeout: controller-runtime's default.
pub const DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// skiff copies a ConfigMap or Secret into every namespace matching a label selector.
#[derive(FromArgs, Debug)]
#[argh(note = "Flags accept `--flag value` and `--flag=value`; switches accept `--x=false`.")]
#[argh(note = "Durations use Go syntax: 500ms, 15s, 1m30s, 1h.")]
struct Options {
    /// kubeconfig file (default: $KUBECONFIG, then in-cluster, then ~/.kube/config)
    #[argh(option, default = "String::new()")]
    kubeconfig: String,
    /// kubeconfig context to use (default: its current-context)
    #[argh(option, default = "String::new()")]
    context: String,
    /// user to impersonate, as kubectl's --as (default: the kubeconfig user's `as`, if any)
    #[argh(option, long = "as", default = "String::new()")]
    act_as: String,
    /// uid to impersonate, as kubectl's --as-uid (default: the kubeconfig user's `as-uid`)
    #[argh(option, default = "String::new()")]
    as_uid: String,
    /// group to impersonate, repeatable, as kubectl's --as-group (default: the kubeconfig
    /// user's `as-groups`)
    #[argh(option)]
    as_group: Vec<String>,
    /// queries per second of the main API client (default 20)
    #[argh(option, default = "DEFAULT_KUBE_API_QPS")]
    kube_api_qps: f32,
    /// burst of the main API client (default 30)
    #[argh(option, default = "DEFAULT_KUBE_API_BURST")]
    kube_api_burst: u32,
    /// take part in leader election (default false)
    #[argh(switch)]
    leader_elect: bool,
    /// name of the Lease (default skiff-leader)
    #[argh(option, default = "DEFAULT_LEADER_ELECTION_ID.to_owned()")]
    leader_election_id: String,
    /// namespace of the Lease (default: the namespace skiff runs in)
    #[argh(option, default = "String::new()")]
    leader_election_namespace: String,
    /// how long a Lease is valid without renewal (default 15s)
    #[argh(option, default = "timing::LEASE_DURATION", from_str_fn(duration_arg))]
    leader_elect_lease_duration: Duration,
    /// how long the leader keeps retrying a failed renewal (default 10s)
    #[argh(option, default = "timing::RENEW_DEADLINE", from_str_fn(duration_arg))]
    leader_elect_renew_deadline: Duration,
    /// wait between lease attempts (default 2s)
    #[argh(option, default = "timing::RETRY_PERIOD", from_str_fn(duration_arg))]
    leader_elect_retry_period: Duration,
    /// release the Lease on shutdown so a standby leads at once (default true)
    #[argh(option, default = "true", from_str_fn(parse_bool))]
    leader_elect_release_on_cancel: bool,
    /// while leading, mark this Pod ($POD_NAME) to be deleted last by its ReplicaSet, so a
    /// rollout moves the Lease once (default false; needs patch on pods)
    #[argh(option, default = "false", from_str_fn(parse_bool))]
    leader_elect_pod_deletion_cost: bool,
    /// shut down as on SIGTERM as soon as this Pod ($POD_NAME) is marked for deletion, before
    /// the kubelet acts on it, so a standby leads sooner (default false; needs get and watch on
    /// pods)
    #[argh(option, default = "false", from_str_fn(parse_bool))]
    stop_on_pod_deletion: bool,
    /// refuse to start unless the API server denies this token a write to an object skiff does
    /// not manage (the admission policy skiff-writes), asked with a dry-run create in skiff's
    /// own namespace (default false; the shipped manifests set true)
    #[argh(option, default = "false", from_str_fn(parse_bool))]
    require_write_policy: bool,
    /// queries per second of the lease client (default 5)
    #[argh(option, default = "DEFAULT_LEADER_ELECT_QPS")]
    leader_elect_qps: f32,
    /// burst of the lease client (default 10)
    #[argh(option, default = "DEFAULT_LEADER_ELECT_BURST")]
    leader_elect_burst: u32,
    /// address of /healthz and /readyz (default :8081)
    #[argh(option, default = "DEFAULT_HEALTH_PROBE_BIND_ADDRESS.to_owned()")]
    health_probe_bind_address: String,
    /// address of /metrics; 0 disables (default :8443)
    #[argh(option, default = "DEFAULT_METRICS_BIND_ADDRESS.to_owned()")]
    metrics_bind_address: String,
    /// serve /metrics over HTTPS to callers authorized by TokenReview and SubjectAccessReview;
    /// false serves plain HTTP to anyone (default true)
    #[argh(option, default = "true", from_str_fn(parse_bool))]
    metrics_secure: bool,
    /// directory holding tls.crt and tls.key for /metrics (default: a self-signed certificate)
    #[argh(option, default = "String::new()")]
    metrics_cert_dir: String,
    /// a watch that hears nothing (no event, no bookmark, no end) this long is resumed on a new
    /// connection; each watch asks the server to end it within 80 % of this (default 1m10s)
    #[argh(
        option,
        default = "DEFAULT_WATCH_IDLE_TIMEOUT",
        from_str_fn(duration_arg)
    )]
    watch_idle_timeout: Duration,
    /// a leader whose watches hear nothing this long, on fresh connections too, releases the
    /// Lease for a replica that hears, and /healthz fails; 0 disables (default 1m30s)
    #[argh(
        option,
        default = "DEFAULT_DEAFNESS_TIMEOUT",
        from_str_fn(duration_arg)
    )]
    deafness_timeout: Duration,
    /// how long controllers may take to stop on shutdown (default 30s)
    #[argh(
        option,
        default = "DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT",
        from_str_fn(duration_arg)
    )]
    graceful_shutdown_timeout: Duration,
    /// namespaces Mirror sources may live in: a comma list, or * for all (default: own namespace)
    #[argh(option, default = "String::new()")]
    source_namespaces: String,
    /// the only Secret names skiff may create and manage in target namespaces: a comma list,
    /// matching the secret-targets component's resourceNames (default none: no Secret copies)
    #[argh(option, default = "String::new()")]
    secret_target_names: String,
    /// let tenants share (see --self-service-kinds): a Mirror in a namespace matching
    /// --offer-namespace-selector copies only into namespaces holding a MirrorAcceptance of it
    /// (default false)
    #[argh(switch)]
    self_service: bool,
    /// with --self-service, the namespaces whose Mirrors are tenants' offers: k=v, k!=v, k or
    /// !k, comma-separated (default skiff.dev/may-offer=true)
    #[argh(option, default = "DEFAULT_OFFER_NAMESPACE_SELECTOR.to_owned()")]
    offer_namespace_selector: String,
    /// with --self-service, the most copies one tenant Mirror makes (default 100)
    #[argh(option, default = "DEFAULT_MAX_COPIES_PER_TENANT_MIRROR")]
    max_copies_per_tenant_mirror: u32,
    /// with --self-service, the kinds tenants may share: configmaps, secrets (only under
    /// --secret-target-names) and kinds --kinds enables, a comma list (default configmaps)
    #[argh(option, default = "DEFAULT_SELF_SERVICE_KINDS.to_owned()")]
    self_service_kinds: String,
    /// with --self-service, the kinds tenants may publish as another, a comma list:
    /// secrets-as-configmaps (certificates only) (default none)
    #[argh(option, default = "String::new()")]
    self_service_projections: String,
    /// with --self-service, offers may leave their copies on deletion (deletionPolicy: Orphan)
    #[argh(switch)]
    self_service_orphan: bool,
    /// kinds Mirrors may copy besides ConfigMaps and Secrets, as resource.group (comma lists,
    /// repeatable): networkpolicies.networking.k8s.io, limitranges, resourcequotas,
    /// rolebindings.rbac.authorization.k8s.io, serviceaccounts (default none)
    #[argh(option)]
    kinds: Vec<String>,
    /// the only ClusterRoles a copied RoleBinding may bind: a comma list, matching the
    /// resourceNames of skiff's `bind` rule (needed with rolebindings in --kinds)
    #[argh(option)]
    bindable_roles: Vec<String>,
    /// the label key a namespace must carry to receive RoleBinding copies, as the admission
    /// policy skiff-rolebindings requires (needed with rolebindings in --kinds)
    #[argh(option, default = "String::new()")]
    binding_namespace_label: String,
    /// on a hub: place fleet Mirrors (spec.clusterSelector) in member clusters' namespaces
    /// (default false)
    #[argh(switch)]
    fleet_hub: bool,
    /// with --fleet-hub, how long a member cluster unheard from (its heartbeat) counts as
    /// silent (default 3m)
    #[argh(
        option,
        default = "fleet::DEFAULT_MEMBER_SILENCE",
        from_str_fn(duration_arg)
    )]
    member_silence_after: Duration,
    /// with --fleet-hub, the QPS of the client that writes Placements (default 250)
    #[argh(option, default = "fleet::DEFAULT_FLEET_QPS")]
    fleet_qps: f32,
    /// with --fleet-hub, its burst (default 500)
    #[argh(option, default = "fleet::DEFAULT_FLEET_BURST")]
    fleet_burst: u32,
    /// on a member cluster: a kubeconfig for its hub (token or client certificate, no exec
    /// plugin), whose context's namespace is the member's on the hub (default none)
    #[argh(option, default = "String::new()")]
    hub_kubeconfig: String,
    /// with --hub-kubeconfig, the hub's name, which every copy from it carries in skiff.dev/hub
    #[argh(option, default = "String::new()")]
    hub_name: String,
    /// with --hub-kubeconfig, the kinds this member takes from its hub: configmaps, secrets
    /// (needs --secret-target-names) and kinds --kinds enables (default configmaps)
    #[argh(option, default = "fleet::DEFAULT_HUB_KINDS.to_owned()")]
    hub_kinds: String,
    /// with --hub-kubeconfig, how often this member renews its heartbeat on the hub; keep it
    /// well under the hub's --member-silence-after (default 1m)
    #[argh(
        option,
        default = "fleet::DEFAULT_HUB_HEARTBEAT",
        from_str_fn(duration_arg)
    )]
    hub_heartbeat_period: Duration,
    /// log line format: text or json (default text)
    #[argh(option, default = "LogFormat::Text")]
    log_format: LogFormat,
    /// error, warn, info, debug or trace (default info)
    #[argh(option, default = "LevelFilter::Info", from_str_fn(parse_level))]
    log_level: LevelFilter,
    /// print the version and git revision, then exit
    #[argh(switch)]
    version: bool,
}

/// The validated configuration of one skiff process.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `--kubeconfig`; `None` = $KUBECONFIG, then in-cluster, then ~/.kube/config.
    pub kubeconfig: Option<PathBuf>,
    /// `--context`; `None` = the kubeconfig's current-context.
    pub context: Option<String>,
    /// `--as`, `--as-uid` and `--as-group`.
    pub impersonate: Overrides,
    pub kube_api_qps: f32,
    pub kube_api_burst: NonZeroU32,
    pub leader_elect: bool,
    pub leader_election_id: String,
    /// `None` = the namespace skiff runs in (in-cluster file or kubeconfig context).
    pub leader_election_namespace: Option<String>,
    /// `--leader-elect-lease-duration`, `-renew-deadline` and `-retry-period`, checked together.
    pub timing: Timing,
    pub release_on_cancel: bool,
    /// `--leader-elect-pod-deletion-cost`: mark the leader's Pod to be deleted last.
    pub pod_deletion_cost: bool,
    /// `--stop-on-pod-deletion`.
    pub stop_on_pod_deletion: bool,
    /// `--require-write-policy`: refuse to start unless the write policy denies this token.
    pub require_write_policy: bool,
    pub leader_elect_qps: f32,
    pub leader_elect_burst: NonZeroU32,
    pub health_probe_bind_address: SocketAddr,
    /// `None` when `--metrics-bind-address=0`.
    pub metrics_bind_address: Option<SocketAddr>,
    /// `--metrics-secure`: HTTPS with authentication and authorization, else plain HTTP.
    pub metrics_secure: bool,
    /// `--metrics-cert-dir`; `None` = a self-signed certificate made at start.
    pub metrics_cert_dir: Option<PathBuf>,
    pub graceful_shutdown_timeout: Duration,
    /// `--watch-idle-timeout` and `--deafness-timeout`, checked together.
    pub hearing: Hearing,
    pub source_namespaces: SourceNamespaces,
    /// `--secret-target-names`, sorted and deduplicated; empty = Secret copies disabled.
    pub secret_target_names: Vec<String>,
    /// `--self-service` with its guardrails; `None` when off (the default).
    pub self_service: Option<SelfService>,
    /// `--kinds` and `--bindable-roles`, checked together; none by default.
    pub kinds: Kinds,
    /// `--fleet-hub` and its settings; `None` when off.
    pub fleet_hub: Option<FleetHub>,
    /// `--hub-kubeconfig` and the member's terms; `None` when this is no member.
    pub hub: Option<HubMember>,
    pub log_format: LogFormat,
    pub log_level: LevelFilter,
}

/// Where Mirror sources may be read from (`--source-namespaces`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceNamespaces {
    /// Only the namespace skiff runs in (the default).
    Own,
    /// `*`: every namespace.
    All,
    /// The listed namespaces.
    Only(Vec<String>),
}

/// Why the flags did not produce [`Settings`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlagError {
    /// `--help` was asked for: print this to stdout and exit 0.
    Help(String),
    /// `--version` was asked for: print [`crate::version::describe`] and exit 0.
    Version,
    /// argh's own message: unknown flag, missing or unparsable value (names the flag).
    Usage(String),
    /// A value that parsed but is not allowed; the message names the flag and why.
    Invalid { flag: &'static str, message: String },
}

impl fmt::Display for FlagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Help(text) => f.write_str(text.trim_end()),
            Self::Version => f.write_str(&crate::version::describe()),
            Self::Usage(text) => write!(f, "{}; see --help", text.trim_end()),
            Self::Invalid { message, .. } => f.write_str(message),
        }
    }
}

impl std::error::Error for FlagError {}

/// Parses the arguments that follow the program name (`std::env::args().skip(1)`).
pub fn parse(args: &[String]) -> Result<Settings, FlagError> {
    let args = argv::normalize(args).map_err(FlagError::Usage)?;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let options = Options::from_args(&["skiff"], &args).map_err(|exit| match exit.status {
        Ok(()) => FlagError::Help(exit.output),
        Err(()) => FlagError::Usage(exit.output),
    })?;
    if options.version {
        return Err(FlagError::Version);
    }
    validate::settings(options)
}

fn duration_arg(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
