//! What one Mirror wants each of its copies to hold, from its source and its spec: the keys it
//! picks, the labels and annotations it sets or carries over, and the hash of it all.
//!
//! Or why it must copy nothing: a source of a type its row refuses (a ServiceAccount token), a
//! listed key the source lacks, or a list of keys without one its type requires. Then the copies keep their last good
//! content, as when the source is missing.

use super::carry::carried;
use super::managed::Managed;
use super::payload::{Digest, Payload};
use super::source::SourceContent;
use super::status::{Reason, Refusal};
use super::types::Mirror;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A copy as its Mirror wants it.
#[derive(Debug)]
pub struct DesiredCopy {
    source: Arc<SourceContent>,
    /// The source's payload cut to `spec.source.keys`, when the Mirror lists keys.
    picked: Option<Payload>,
    /// Labels and annotations skiff sets on the copy besides its own (target and carried).
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub hash: Digest,
}

impl DesiredCopy {
    /// The copy `mirror` wants of `source`, or the condition to report instead.
    pub fn of(mirror: &Mirror, source: &Arc<SourceContent>) -> Result<DesiredCopy, Refusal> {
        refuse_type(mirror, source)?;
        let keys = &mirror.spec.source.keys;
        let picked = if keys.is_empty() {
            None
        } else {
            Some(pick(mirror, source, keys)?)
        };
        let spec = &mirror.spec.source;
        let mut labels = carried(&spec.copy_labels, &source.labels);
        let mut annotations = carried(&spec.copy_annotations, &source.annotations);
        if let Some(target) = mirror.spec.target_metadata() {
            labels.extend(target.labels.clone());
            annotations.extend(target.annotations.clone());
        }
        let payload = picked.as_ref().unwrap_or(&source.payload);
        let managed = Managed::wanted(&labels, &annotations);
        let hash = match (&picked, managed.if_any()) {
            (None, None) => source.hash,
            (_, managed) => payload.hash_with(managed),
        };
        Ok(DesiredCopy {
            source: Arc::clone(source),
            picked,
            labels,
            annotations,
            hash,
        })
    }

    pub fn payload(&self) -> &Payload {
        self.picked.as_ref().unwrap_or(&self.source.payload)
    }
}

fn refuse_type(mirror: &Mirror, source: &SourceContent) -> Result<(), Refusal> {
    let Some((type_, why)) = source.refused_type() else {
        return Ok(());
    };
    Err(Refusal {
        reason: Reason::SourceNotAllowed,
        message: format!(
            "{} {}/{} is of type {type_}; skiff never copies one, as {why}. Nothing is copied",
            source.payload.row().name,
            mirror.metadata.namespace(),
            mirror.spec.source.name
        ),
    })
}

/// The source cut to `keys`, when it holds them all and they are all its type requires.
fn pick(mirror: &Mirror, source: &SourceContent, keys: &[String]) -> Result<Payload, Refusal> {
    let missing: Vec<&str> = keys
        .iter()
        .map(String::as_str)
        .filter(|k| !source.payload.has_key(k))
        .collect();
    if !missing.is_empty() {
        return Err(Refusal {
            reason: Reason::SourceKeyMissing,
            message: format!(
                "spec.source.keys lists {}, which {} {}/{} does not hold; nothing is copied and \
                 the copies keep their last content until the source holds every listed key",
                and_list(&missing),
                mirror.spec.source.kind.as_str(),
                mirror.metadata.namespace(),
                mirror.spec.source.name
            ),
        });
    }
    let picked = source.payload.only(keys);
    required_keys_listed(&picked)?;
    Ok(picked)
}

/// Refuses a pick that leaves out a key the Secret's type requires (the API server would
/// refuse every copy).
fn required_keys_listed(picked: &Payload) -> Result<(), Refusal> {
    let Some(type_) = picked.text("type") else {
        return Ok(());
    };
    let required = picked.row().required_keys.iter();
    let Some((_, groups)) = required.into_iter().find(|(t, _)| *t == type_) else {
        return Ok(());
    };
    let unmet: Vec<String> = groups
        .iter()
        .filter(|group| !group.iter().any(|k| picked.has_key(k)))
        .map(|group| group.join(" or "))
        .collect();
    if unmet.is_empty() {
        return Ok(());
    }
    let required: Vec<String> = groups.iter().map(|group| group.join(" or ")).collect();
    Err(Refusal {
        reason: Reason::RequiredKeyNotListed,
        message: format!(
            "a {} of type {type_} must hold {}, but spec.source.keys leaves out {}; nothing \
             is copied. Add it to spec.source.keys, or remove the list to copy every key",
            picked.row().name,
            and_list(&required),
            and_list(&unmet)
        ),
    })
}

/// `a`, `a and b`, `a, b and c`.
fn and_list<S: AsRef<str>>(items: &[S]) -> String {
    match items {
        [] => String::new(),
        [one] => one.as_ref().to_owned(),
        [rest @ .., last] => {
            let rest: Vec<&str> = rest.iter().map(AsRef::as_ref).collect();
            format!("{} and {}", rest.join(", "), last.as_ref())
        }
    }
}

#[cfg(test)]
mod tests;
