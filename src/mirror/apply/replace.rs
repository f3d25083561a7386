//! Replacing a copy the server will not update: a Secret whose type differs from its source's
//! (a Secret's type cannot change), or an immutable copy whose data must change (an immutable
//! object's data cannot). Updating it would fail forever; it is deleted and created again.
//!
//! Only after the server refused the update, and only when a fresh read shows the object is
//! still this Mirror's (or handed to it) and one of those two reasons holds: any other refusal
//! is reported as it is. The delete is conditional on the uid and resourceVersion just read, so
//! an object someone replaced or changed in between is never deleted.

use super::copy_write::{CopyWriter, Done, Target, Wrote};
use crate::kube::Error;
use crate::mirror::existing::Claim;

/// The server refused (`refused`) to update the copy in `ns`: replace it if that is why.
pub async fn replace_copy(writer: &CopyWriter, target: &Target, ns: &str, refused: Error) -> Done {
    let found = match writer.existing(target, ns).await {
        Ok(found) => found,
        Err(e) => return Done::Failed(e),
    };
    let claim = found.claim(&target.owner);
    let reason = found.replacement_reason(&target.desired);
    let (Claim::Mine | Claim::Adoptable, Some(reason)) = (claim, reason) else {
        return Done::Failed(refused);
    };
    let rv = found.info.resource_version.to_string();
    if let Err(e) = writer.delete_exact(target, ns, &found.uid, &rv).await {
        return Done::Failed(e);
    }
    match writer.create(target, ns).await {
        Ok(()) => Done::Written(Wrote {
            namespace: ns.to_owned(),
            adopted: claim == Claim::Adoptable,
            replaced: Some(reason),
        }),
        Err(e) => Done::Failed(e),
    }
}
