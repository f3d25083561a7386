//! Updating a copy in place: one strategic merge patch, conditional on the version seen, that
//! makes it what its Mirror wants, answered with the metadata alone. An update the server
//! finds invalid may need a replacement instead ([`super::replace`]).

use super::copy_write::{CopyWriter, Done, Target, Wrote};
use super::replace::replace_copy;
use crate::mirror::managed::Record;
use crate::mirror::payload::HeldMaps;
use crate::mirror::render::update_patch;

/// Patches the copy in `ns`, seen at `rv` with `record` and holding the maps `held`, into what
/// `target` wants.
pub async fn update_copy(
    writer: &CopyWriter,
    target: &Target,
    ns: &str,
    rv: &str,
    record: Option<&Record>,
    held: HeldMaps,
) -> Done {
    let patch = update_patch(&target.owner, &target.desired, record, rv);
    match writer.patch(target, ns, &patch, held, rv).await {
        Ok(()) => Wrote::plain(ns),
        Err(e) if e.code() == Some(422) => replace_copy(writer, target, ns, e).await,
        Err(e) => Done::Failed(e),
    }
}
