//! The objects of one list page, kept until the whole page has been put in the store, so they
//! are freed together.
//!
//! A relist is reported object by object, and a store keeps a small projection of each (a
//! namespace's name and packed labels, a few dozen bytes). Dropped as soon as it is stored, an
//! object hands its memory straight to the next object's projection: malloc reuses the chunks
//! just freed, so the projections, which live on, end up spread thinly over every page of heap
//! the decoded list filled, and none of those pages can go back to the system afterwards.
//! Kept until its page is done, the objects still fill that memory while the projections are
//! made, which therefore come from elsewhere, side by side; then the page's memory is freed as
//! one piece that `heap::release_when_idle` can return. The watcher holds the page's objects
//! until it reports them anyway, so this keeps nothing longer than the page lasts.

use super::change::Change;

/// The objects of the page being reported that were reported already.
pub struct ListedPage<K> {
    reported: Vec<K>,
}

impl<K> Default for ListedPage<K> {
    fn default() -> Self {
        ListedPage {
            reported: Vec::new(),
        }
    }
}

impl<K> ListedPage<K> {
    /// Keeps the object of a `Listed` event (room for the `remaining` objects of its page is
    /// made at the first), then frees every object kept once `remaining` is 0: the page is done.
    pub fn keep(&mut self, event: Change<K>, remaining: usize) {
        if let Change::Listed(object) = event {
            if self.reported.capacity() == 0 {
                self.reported.reserve_exact(remaining + 1);
            }
            self.reported.push(object);
        }
        if remaining == 0 {
            self.reported = Vec::new();
        }
    }
}

#[cfg(test)]
impl<K> ListedPage<K> {
    /// Objects kept.
    fn len(&self) -> usize {
        self.reported.len()
    }

    fn is_empty(&self) -> bool {
        self.reported.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_page_is_freed_together_once_its_last_object_is_reported() {
        let objects: Vec<Arc<()>> = (0..3).map(|_| Arc::new(())).collect();
        let mut page = ListedPage::default();
        page.keep(Change::Relisting, 3);
        for (i, object) in objects.iter().enumerate() {
            page.keep(Change::Listed(Arc::clone(object)), 2 - i);
            if i < 2 {
                assert_eq!(page.len(), i + 1, "kept while the page lasts");
                assert!(objects[..=i].iter().all(|o| Arc::strong_count(o) == 2));
            }
        }
        assert!(
            page.is_empty(),
            "the whole page is freed after its last object"
        );
        assert!(objects.iter().all(|o| Arc::strong_count(o) == 1));
    }

    #[test]
    fn events_outside_a_relist_keep_nothing() {
        let mut page = ListedPage::default();
        page.keep(Change::Applied(Arc::new(())), 0);
        page.keep(Change::Relisted, 0);
        assert!(page.is_empty());
    }
}
