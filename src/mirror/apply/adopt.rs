//! A create that meets an object with the copy's name: the object is read, and then updated
//! (it is this Mirror's copy, the cache had not seen it yet), adopted (handed to this Mirror
//! with `skiff.dev/adopt`), or left alone as a conflict.
//!
//! Adoption is explicit: skiff never takes over an object it does not manage unless the
//! object's own annotation names the Mirror, `skiff.dev/adopt: "<namespace>/<name>"`. An
//! adopted object keeps its other labels and annotations; it gets skiff's, the source's content,
//! and from then on is a copy like any other (deleted with its Mirror). skiff sees an object only
//! when it tries to create the copy, so an object that carries the annotation when first met is
//! adopted at once, and one annotated after it was reported as a conflict at the next re-check
//! of the conflicts, within 5 minutes.

use super::copy_write::{CopyWriter, Done, Target, Wrote};
use super::update::update_copy;
use crate::mirror::existing::Claim;
use std::time::Instant;

/// The create in `ns` found an object with the copy's name: update it if it is this
/// Mirror's, adopt it if it was handed over, otherwise leave it alone and report it.
pub async fn meet_existing(writer: &CopyWriter, target: &Target, ns: &str) -> Done {
    let found = match writer.existing(target, ns).await {
        Ok(found) => found,
        Err(e) => return Done::Failed(e),
    };
    let adopted = match found.claim(&target.owner) {
        Claim::Mine if found.info.content_hash == target.desired.hash => {
            writer.record_found(target, ns, found.info);
            return Wrote::plain(ns);
        }
        Claim::Mine => false,
        Claim::Adoptable => true,
        // Another Mirror's copy is labelled, so the copy cache will hold it and its deletion
        // will wake this Mirror; only an object the cache cannot see blocks the namespace (and
        // is re-checked later).
        Claim::NotMine if found.info.owner.is_none() => {
            return Done::Blocked(ns.to_owned(), Instant::now());
        }
        Claim::NotMine => return Done::Conflict(ns.to_owned()),
    };
    let (rv, record) = (
        found.info.resource_version.to_string(),
        found.info.record.as_ref(),
    );
    match update_copy(writer, target, ns, &rv, record, found.info.held).await {
        Done::Written(wrote) => Done::Written(Wrote { adopted, ..wrote }),
        other => other,
    }
}
