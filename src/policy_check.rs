//! Whether the API server holds skiff's token to the objects skiff manages, asked at start.
//!
//! RBAC names kinds, not objects: what keeps a stolen token from overwriting every ConfigMap in
//! the cluster is the admission policy `skiff-writes` (manifests/write-policy.yaml). A policy
//! that is missing, whose binding only warns or audits, or that the API server does not enforce
//! changes nothing skiff itself does, so nothing else would show it. So skiff asks as a thief
//! would, harmlessly: a dry-run create (`dryRun=All`: admission runs, nothing is stored) of a
//! ConfigMap without skiff's labels in its own namespace, which the policy must deny with a 403
//! naming a ValidatingAdmissionPolicy.
//!
//! With `--require-write-policy` (the shipped manifests and chart set it) a replica whose probe
//! is not denied refuses to start, naming what is missing: a Pod that runs healthy while its
//! token may rewrite the cluster's DNS is the failure this exists to prevent, and a warning in
//! the log of a healthy Pod is read by nobody. A policy applied with the Deployment takes the
//! API server a moment to enforce, so the probe is repeated for up to [`WAIT`] first. Without
//! the flag skiff sends nothing (runs against a cluster without the policy, or a test server).

use crate::kube::api::{ConfigMap, ObjectMeta};
use crate::kube::{Client, Error, Written};
use std::time::{Duration, Instant};

/// How long a replica waits for the policy to be enforced before it refuses to start.
pub const WAIT: Duration = Duration::from_secs(20);
/// Between two probes.
const EVERY: Duration = Duration::from_millis(500);
/// The ConfigMap the probe asks to create; never stored.
pub const PROBE_NAME: &str = "skiff-write-policy-probe";

/// What one probe found out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// An admission policy denied the write (its message): the policy is there and enforced.
    Enforced(String),
    /// The write was let through: nothing stops this token.
    NotEnforced,
    /// The probe failed in a way that says nothing about the policy: why.
    Unknown(String),
}

/// The verdict of the server's answer to the probe.
pub fn verdict(answer: Result<Written, Error>) -> Verdict {
    match answer {
        // Admission let it through; only the store found the name taken.
        Ok(_) => Verdict::NotEnforced,
        Err(e) if e.is_already_exists() => Verdict::NotEnforced,
        Err(Error::Api {
            code: 403, message, ..
        }) if message.contains("ValidatingAdmissionPolicy") => Verdict::Enforced(message),
        Err(e) => Verdict::Unknown(e.to_string()),
    }
}

/// At start: with `required`, Ok once the policy denies the probe in `namespace` (skiff's own),
/// and why not after [`WAIT`]; without, nothing is asked.
pub async fn at_start(
    client: &Client,
    namespace: Option<&str>,
    required: bool,
) -> Result<(), String> {
    if !required {
        log::info!(
            "not checking that an admission policy holds this token to skiff's own objects \
             (--require-write-policy=false)"
        );
        return Ok(());
    }
    let namespace = namespace.ok_or(
        "--require-write-policy needs skiff's namespace (in-cluster, or the kubeconfig \
         context's) to probe the policy in; set it, or set the flag to false",
    )?;
    let deadline = Instant::now() + WAIT;
    loop {
        match probe(client, namespace).await {
            Verdict::Enforced(message) => {
                log::info!("the write policy holds this token to skiff's own objects: {message}");
                return Ok(());
            }
            not_yet if Instant::now() >= deadline => return Err(refusal(&not_yet, namespace)),
            not_yet => log::debug!("write policy probe in {namespace}: {not_yet:?}; again"),
        }
        smol::Timer::after(EVERY).await;
    }
}

/// One dry-run create of an unlabelled ConfigMap in `namespace`.
async fn probe(client: &Client, namespace: &str) -> Verdict {
    let unlabelled = ConfigMap {
        metadata: ObjectMeta::named(Some(namespace), PROBE_NAME),
        ..ConfigMap::default()
    };
    verdict(client.create_dry_run(&unlabelled).await)
}

/// Why skiff refuses to start after `last`, and what to do.
fn refusal(last: &Verdict, namespace: &str) -> String {
    let why = match last {
        Verdict::NotEnforced => format!(
            "the API server let this token create a ConfigMap without skiff's labels in \
             {namespace} (dry run, nothing stored): no admission policy holds it to the \
             objects skiff manages, so a stolen token could overwrite any ConfigMap in the \
             cluster"
        ),
        Verdict::Unknown(e) => format!("the probe in {namespace} failed: {e}"),
        Verdict::Enforced(_) => "the policy is enforced".to_owned(),
    };
    format!(
        "--require-write-policy: {why} (for {} s). Install the ValidatingAdmissionPolicy \
         skiff-writes and its binding with validationActions [Deny] (manifests/, the Helm \
         chart; Kubernetes 1.30 or later), or set --require-write-policy=false to run without \
         it (README, Security)",
        WAIT.as_secs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16, reason: &str, message: &str) -> Result<Written, Error> {
        Err(Error::Api {
            code,
            reason: reason.to_owned(),
            message: message.to_owned(),
            retry_after: None,
        })
    }

    #[test]
    fn only_a_denial_by_an_admission_policy_counts_as_enforced() {
        let denied = "configmaps \"skiff-write-policy-probe\" is forbidden: \
                      ValidatingAdmissionPolicy 'skiff-writes' with binding 'skiff-writes' \
                      denied request: skiff may create only objects carrying its labels";
        assert_eq!(
            verdict(api(403, "Forbidden", denied)),
            Verdict::Enforced(denied.to_owned())
        );
        assert_eq!(verdict(Ok(Written::default())), Verdict::NotEnforced);
        let taken = api(409, "AlreadyExists", "configmaps \"x\" already exists");
        assert_eq!(verdict(taken), Verdict::NotEnforced, "admission let it by");
        let rbac = "configmaps is forbidden: User \"system:serviceaccount:a:b\" cannot create";
        assert!(matches!(
            verdict(api(403, "Forbidden", rbac)),
            Verdict::Unknown(m) if m.contains("cannot create")
        ));
        let down = Err(Error::Transport("connection refused".into()));
        assert!(matches!(verdict(down), Verdict::Unknown(_)));
    }

    #[test]
    fn the_refusal_says_what_is_let_through_and_how_to_fix_or_waive_it() {
        let text = refusal(&Verdict::NotEnforced, "skiff-system");
        for part in [
            "skiff-system",
            "skiff-writes",
            "validationActions [Deny]",
            "--require-write-policy=false",
            "1.30",
        ] {
            assert!(text.contains(part), "lacks {part}: {text}");
        }
        let text = refusal(&Verdict::Unknown("API error 403".into()), "ops");
        assert!(
            text.contains("the probe in ops failed: API error 403"),
            "{text}"
        );
    }
}
