//! Updating a copy in place: a strategic merge patch, conditional on the version seen, that
//! makes it what its Mirror wants, and a merge patch after it when the server's answer shows a
//! map still differing (see [`maps_patch`]). An update the server finds invalid may need a
//! replacement instead ([`super::replace`]).

use super::copy_write::{CopyWriter, Done, Target, Wrote};
use super::replace::replace_copy;
use crate::kube::PatchKind;
use crate::mirror::managed::Record;
use crate::mirror::render::{maps_patch, update_patch};

/// Patches the copy in `ns`, seen at `rv` with `record`, into what `target` wants.
pub async fn update_copy(
    writer: &CopyWriter,
    target: &Target,
    ns: &str,
    rv: &str,
    record: Option<&Record>,
) -> Done {
    let mut patch = update_patch(&target.owner, &target.desired, record, rv);
    let (mut kind, mut replaced) = (PatchKind::Strategic, rv.to_owned());
    // One call site for both patches, so the request's code is compiled in once.
    loop {
        let answer = match writer.patch(target, ns, &patch, kind, &replaced).await {
            Ok(answer) => answer,
            Err(e) if e.code() == Some(422) && kind == PatchKind::Strategic => {
                return replace_copy(writer, target, ns, e).await;
            }
            Err(e) => return Done::Failed(e),
        };
        match maps_patch(&answer, &target.desired) {
            Some(fix) if kind == PatchKind::Strategic => {
                let version = answer.resource_version().to_owned();
                (patch, kind, replaced) = (fix, PatchKind::Merge, version);
            }
            _ => return Wrote::plain(ns),
        }
    }
}
