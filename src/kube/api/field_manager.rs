//! Who last changed an object, besides skiff: one name out of `metadata.managedFields`.
//!
//! The API server records, per field manager, the time of its latest change. A copy that
//! another controller keeps changing back names that controller there, and that one name is
//! all skiff keeps (never the list): the latest entry whose manager is not skiff's and that is
//! not a status-subresource write. Managers name themselves (a client picks its name), so
//! this is what the writer *reports* itself as.
//!
//! Names are interned: an object carries a 2-byte [`FieldManager`], and the few distinct
//! names a cluster's writers use are kept once for the process. The table is bounded
//! ([`MAX_NAMES`]): past it, a new name reads as unknown rather than growing memory.

use serde::Deserialize;
use serde::de::{Deserializer, SeqAccess, Visitor};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::num::NonZeroU16;
use std::sync::{Arc, Mutex, OnceLock};

/// skiff's own field manager: the API server names an update's manager after the first part
/// of its User-Agent (`skiff/<version>`).
pub const OWN_MANAGER: &str = "skiff";

/// Distinct manager names kept for the process at most.
pub const MAX_NAMES: usize = 1024;

/// An interned field manager name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldManager(NonZeroU16);

#[derive(Default)]
struct Names {
    index: HashMap<Arc<str>, FieldManager>,
    names: Vec<Arc<str>>,
}

fn names() -> &'static Mutex<Names> {
    static NAMES: OnceLock<Mutex<Names>> = OnceLock::new();
    NAMES.get_or_init(Default::default)
}

impl FieldManager {
    /// The interned `name`, or `None` once [`MAX_NAMES`] names are kept.
    pub fn intern(name: &str) -> Option<FieldManager> {
        let mut names = names().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = names.index.get(name) {
            return Some(*known);
        }
        if names.names.len() >= MAX_NAMES {
            return None;
        }
        let name: Arc<str> = Arc::from(name);
        names.names.push(Arc::clone(&name));
        let id = NonZeroU16::new(names.names.len() as u16)?;
        let manager = FieldManager(id);
        names.index.insert(name, manager);
        Some(manager)
    }

    /// The name as the writer reported it.
    pub fn name(self) -> Arc<str> {
        let names = names().lock().unwrap_or_else(|e| e.into_inner());
        let slot = usize::from(self.0.get()) - 1;
        names
            .names
            .get(slot)
            .cloned()
            .unwrap_or_else(|| "unknown".into())
    }
}

/// The fields of a `managedFields` entry skiff reads; the rest (`fieldsV1`) is skipped.
#[derive(Deserialize)]
struct Entry<'a> {
    #[serde(borrow, default)]
    manager: Cow<'a, str>,
    #[serde(borrow, default)]
    time: Cow<'a, str>,
    #[serde(borrow, default)]
    subresource: Cow<'a, str>,
}

/// The latest other writer of a `managedFields` list, read without building the list.
pub struct LatestOther(pub Option<FieldManager>);

impl<'de> Deserialize<'de> for LatestOther {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<LatestOther, D::Error> {
        deserializer.deserialize_any(LatestVisitor)
    }
}

struct LatestVisitor;

impl<'de> Visitor<'de> for LatestVisitor {
    type Value = LatestOther;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("managedFields (a list of entries)")
    }

    /// `null`.
    fn visit_unit<E>(self) -> Result<LatestOther, E> {
        Ok(LatestOther(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LatestOther, A::Error> {
        // RFC 3339 times in the server's one format compare as strings; on a tie (they have
        // one-second resolution) the later entry wins.
        let mut latest: Option<(String, String)> = None;
        while let Some(entry) = seq.next_element::<Entry>()? {
            let counts = entry.manager != OWN_MANAGER && entry.subresource != "status";
            let newer = latest.as_ref().is_none_or(|(t, _)| *entry.time >= **t);
            if counts && newer {
                latest = Some((entry.time.into_owned(), entry.manager.into_owned()));
            }
        }
        let manager = latest.and_then(|(_, name)| FieldManager::intern(&name));
        Ok(LatestOther(manager))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latest(json: &str) -> Option<String> {
        let LatestOther(m) = serde_json::from_str(json).expect("valid managedFields");
        m.map(|m| m.name().to_string())
    }

    #[test]
    fn the_latest_writer_other_than_skiff_is_kept() {
        let fields = r#"[
            {"manager":"kubectl-create","operation":"Update","time":"2026-12-01T10:00:00Z",
             "fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}}},
            {"manager":"argocd-controller","operation":"Apply","time":"2026-12-01T10:05:00Z",
             "fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}}},
            {"manager":"skiff","operation":"Update","time":"2026-12-01T10:06:00Z"}
        ]"#;
        assert_eq!(latest(fields).as_deref(), Some("argocd-controller"));
    }

    #[test]
    fn status_writes_and_skiffs_own_never_count() {
        let fields = r#"[
            {"manager":"skiff","operation":"Update","time":"2026-12-01T10:06:00Z"},
            {"manager":"kubelet","operation":"Update","subresource":"status",
             "time":"2026-12-01T10:07:00Z"}
        ]"#;
        assert_eq!(latest(fields), None);
        assert_eq!(latest("null"), None);
        assert_eq!(latest("[]"), None);
    }

    #[test]
    fn a_name_is_interned_once() {
        let a = FieldManager::intern("fighter-a").expect("room");
        assert_eq!(FieldManager::intern("fighter-a"), Some(a));
        assert_ne!(FieldManager::intern("fighter-b"), Some(a));
        assert_eq!(&*a.name(), "fighter-a");
        assert_eq!(size_of::<Option<FieldManager>>(), 2);
    }

    #[test]
    fn skiffs_user_agent_names_its_manager() {
        let server = http_types::Url::parse("https://10.0.0.1:6443").expect("a URL");
        let config = crate::kube::Config::new(server);
        assert!(
            config.user_agent.starts_with(&format!("{OWN_MANAGER}/")),
            "{}",
            config.user_agent
        );
    }
}
