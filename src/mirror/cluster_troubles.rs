//! On a hub, the member clusters each fleet Mirror last announced as silent or failing, so an
//! Event names each cluster once when its trouble starts and once when it ends, however many
//! reconciles see it in between.
//!
//! Kept in memory: a restarted hub announces the troubles it finds once more, and cannot say
//! "back" of a trouble only its predecessor saw; the Mirror's status says both.

use super::copy::Owner;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// A cluster's trouble: [`SILENT`], or the reason its member reported.
pub type Trouble = String;

/// The trouble of a cluster not heard from lately.
pub const SILENT: &str = "silent";

/// What changed in one Mirror's clusters since it was last announced.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct News {
    /// Clusters newly silent or failing, or failing for another reason now, with their trouble.
    pub troubled: Vec<(String, Trouble)>,
    /// Clusters troubled before, well now (or no longer selected).
    pub back: Vec<String>,
}

#[derive(Default)]
pub struct ClusterTroubles {
    announced: Mutex<HashMap<Owner, BTreeMap<String, Trouble>>>,
}

impl ClusterTroubles {
    /// Records `now` (each troubled cluster of `owner`'s Mirror and its trouble) and returns
    /// what changed since the last call.
    pub fn news(&self, owner: &Owner, now: BTreeMap<String, Trouble>) -> News {
        let mut announced = self.announced.lock().unwrap_or_else(|e| e.into_inner());
        let before = announced.remove(owner).unwrap_or_default();
        let troubled = (now.iter())
            .filter(|(cluster, trouble)| before.get(*cluster) != Some(trouble))
            .map(|(cluster, trouble)| (cluster.clone(), trouble.clone()))
            .collect();
        let back = (before.into_keys())
            .filter(|cluster| !now.contains_key(cluster))
            .collect();
        if !now.is_empty() {
            announced.insert(owner.clone(), now);
        }
        News { troubled, back }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> Owner {
        named_owner("bundle")
    }

    fn named_owner(name: &str) -> Owner {
        Owner {
            namespace: "skiff-system".to_owned(),
            name: name.to_owned(),
        }
    }

    fn troubles(entries: &[(&str, &str)]) -> BTreeMap<String, Trouble> {
        (entries.iter())
            .map(|(c, t)| (c.to_string(), t.to_string()))
            .collect()
    }

    fn named(entries: &[(&str, &str)]) -> Vec<(String, Trouble)> {
        troubles(entries).into_iter().collect()
    }

    #[test]
    fn a_trouble_is_news_when_it_starts_changes_and_ends_and_not_while_it_lasts() {
        let t = ClusterTroubles::default();
        let silent = [("east-1", "silent")];
        assert_eq!(t.news(&owner(), troubles(&silent)).troubled, named(&silent));
        assert_eq!(t.news(&owner(), troubles(&silent)), News::default());
        let failing = [("east-1", "Conflict"), ("west-1", "silent")];
        assert_eq!(
            t.news(&owner(), troubles(&failing)).troubled,
            named(&failing)
        );
        let news = t.news(&owner(), troubles(&[("west-1", "silent")]));
        assert_eq!(news.back, ["east-1"]);
        assert!(news.troubled.is_empty());
        assert_eq!(t.news(&owner(), BTreeMap::new()).back, ["west-1"]);
        assert_eq!(t.news(&owner(), BTreeMap::new()), News::default());
    }

    #[test]
    fn each_mirror_has_its_own_troubles() {
        let t = ClusterTroubles::default();
        let silent = troubles(&[("east-1", "silent")]);
        t.news(&owner(), silent.clone());
        let other = named_owner("other");
        assert_eq!(
            t.news(&other, silent).troubled,
            named(&[("east-1", "silent")])
        );
    }
}
