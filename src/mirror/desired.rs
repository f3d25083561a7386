//! What one Mirror wants each of its copies to hold, from its source and its spec: the keys it
//! picks, the kind it publishes them as, the names it gives them, the labels and annotations it
//! sets or carries over, and the hash of it all.
//!
//! Or why it must copy nothing: a source of a type its row refuses (a ServiceAccount token), a
//! listed or renamed key the source lacks, two keys renamed to one name, a value a projection
//! may not publish (see [`super::projection`]), or copies without a key their type requires.
//! Then the copies keep their last good content, as when the source is missing.

use super::carry::carried;
use super::managed::Managed;
use super::payload::{Digest, Payload};
use super::projection::project;
use super::source::SourceContent;
use super::status::{Reason, Refusal, and_list};
use super::types::Mirror;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A copy as its Mirror wants it.
#[derive(Debug)]
pub struct DesiredCopy {
    source: Arc<SourceContent>,
    /// The source's payload as the Mirror shapes it (its keys picked, published as another
    /// kind, renamed), when it does.
    shaped: Option<Payload>,
    /// Labels and annotations skiff sets on the copy besides its own (target and carried).
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub hash: Digest,
}

impl DesiredCopy {
    /// The copy `mirror` wants of `source`, or the condition to report instead.
    pub fn of(mirror: &Mirror, source: &Arc<SourceContent>) -> Result<DesiredCopy, Refusal> {
        refuse_type(mirror, source)?;
        let shaped = shape(mirror, source)?;
        let spec = &mirror.spec.source;
        let mut labels = carried(&spec.copy_labels, &source.labels);
        let mut annotations = carried(&spec.copy_annotations, &source.annotations);
        if let Some(target) = mirror.spec.target_metadata() {
            labels.extend(target.labels.clone());
            annotations.extend(target.annotations.clone());
        }
        let payload = shaped.as_ref().unwrap_or(&source.payload);
        let managed = Managed::wanted(&labels, &annotations);
        let hash = match (&shaped, managed.if_any()) {
            (None, None) => source.hash,
            (_, managed) => payload.hash_with(managed),
        };
        Ok(DesiredCopy {
            source: Arc::clone(source),
            shaped,
            labels,
            annotations,
            hash,
        })
    }

    pub fn payload(&self) -> &Payload {
        self.shaped.as_ref().unwrap_or(&self.source.payload)
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

/// The source's payload cut to the listed keys, published as the copies' kind and renamed, when
/// it holds every key named and the copies would hold every key their type requires; `None`
/// when the Mirror copies the source as it is.
fn shape(mirror: &Mirror, source: &SourceContent) -> Result<Option<Payload>, Refusal> {
    let spec = &mirror.spec.source;
    if spec.keys.is_empty() && spec.rename.is_empty() && !mirror.spec.projects() {
        return Ok(None);
    }
    let source_named = format!(
        "{} {}/{}",
        spec.kind.as_str(),
        mirror.metadata.namespace(),
        spec.name
    );
    let lists = "spec.source.keys lists";
    held(&source.payload, (lists, &source_named), spec.keys.iter())?;
    // Borrowed until something changes it: a big source is not copied for a rename.
    let mut payload = match spec.keys.is_empty() {
        true => Cow::Borrowed(&source.payload),
        false => Cow::Owned(source.payload.only(&spec.keys)),
    };
    if mirror.spec.projects() {
        payload = Cow::Owned(project(mirror, &payload)?);
    }
    if !spec.rename.is_empty() {
        let picked = match spec.keys.is_empty() {
            true => source_named,
            false => format!("spec.source.keys of {source_named}"),
        };
        payload = Cow::Owned(rename(mirror, &payload, &picked)?);
    }
    required_keys_kept(&payload)?;
    Ok(Some(payload.into_owned()))
}

/// The payload with the Mirror's renames, when each names a key it holds and no two keys end
/// under one name; `picked` says what the payload holds, for a message.
fn rename(mirror: &Mirror, payload: &Payload, picked: &str) -> Result<Payload, Refusal> {
    let renames = &mirror.spec.source.rename;
    let from = renames.iter().map(|r| &r.from);
    held(payload, ("spec.source.rename renames", picked), from)?;
    let to = |key: &str| {
        renames
            .iter()
            .find(|r| r.from == key)
            .map(|r| r.to.as_str())
    };
    payload.renamed(to).map_err(|twice| {
        let twice: Vec<&str> = twice.iter().map(String::as_str).collect();
        Refusal {
            reason: Reason::RenameCollides,
            message: format!(
                "spec.source.rename gives {} to two keys of the copies (a renamed key and one \
                 copied under its own name, or renamed to it too); nothing is copied. Rename \
                 the other key too, or leave it out of spec.source.keys",
                and_list(&twice)
            ),
        }
    })
}

/// Refuses the keys of `names` that `payload` lacks: `what` says where the Mirror names them,
/// `holder` what the payload is.
fn held<'a>(
    payload: &Payload,
    (what, holder): (&str, &str),
    names: impl Iterator<Item = &'a String>,
) -> Result<(), Refusal> {
    let missing: Vec<&str> = (names.map(String::as_str))
        .filter(|k| !payload.has_key(k))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Refusal {
        reason: Reason::SourceKeyMissing,
        message: format!(
            "{what} {}, which {holder} does not hold; nothing is copied and the copies keep \
             their last content until the source holds every key named",
            and_list(&missing),
        ),
    })
}

/// Refuses copies without a key their Secret type requires (the API server would refuse every
/// one): a pick that leaves it out, or a rename that takes it away.
fn required_keys_kept(picked: &Payload) -> Result<(), Refusal> {
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
            "a {} of type {type_} must hold {}, but spec.source.keys or spec.source.rename \
             leaves out {}; nothing is copied. Add it to spec.source.keys and do not rename \
             it, or remove the list to copy every key",
            picked.row().name,
            and_list(&required),
            and_list(&unmet)
        ),
    })
}

#[cfg(test)]
mod tests;
