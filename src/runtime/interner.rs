//! One shared allocation per distinct value that many cached objects repeat.
//!
//! The caches hold one entry per object, and many entries repeat a few values: every copy of
//! a Mirror names the same owner, most namespaces carry one of a handful of label sets. Held
//! once each, such a value costs its entries a pointer rather than an allocation of their own.
//! Values no entry holds any more are dropped from the table once it has doubled since the
//! last sweep, so it stays the size of the values still held (at most twice it, and never
//! less than [`FLOOR`]) however often they change, and the sweeps cost O(1) per new value.

use std::borrow::Borrow;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

/// Below this many values the table is never swept.
const FLOOR: usize = 16;

/// A table of shared values, handing out the same [`Arc`] for equal values still held.
pub struct Interner<T: ?Sized> {
    table: Mutex<Table<T>>,
}

struct Table<T: ?Sized> {
    values: BTreeSet<Arc<T>>,
    /// The table's size after the last sweep.
    swept_at: usize,
}

impl<T: ?Sized + Ord> Interner<T> {
    pub const fn new() -> Interner<T> {
        Interner {
            table: Mutex::new(Table {
                values: BTreeSet::new(),
                swept_at: 0,
            }),
        }
    }

    /// The shared `value`: the same allocation for every equal value still held somewhere.
    pub fn share<V: Borrow<T> + Into<Arc<T>>>(&self, value: V) -> Arc<T> {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(known) = table.values.get(value.borrow()) {
            return Arc::clone(known);
        }
        if table.values.len() >= 2 * table.swept_at.max(FLOOR) {
            table.values.retain(|v| Arc::strong_count(v) > 1);
            table.swept_at = table.values.len();
        }
        let value = value.into();
        table.values.insert(Arc::clone(&value));
        value
    }

    /// How many values the table keeps, held or not yet swept.
    #[cfg(test)]
    #[allow(clippy::len_without_is_empty)] // tests ask how large it grew, never whether empty
    pub fn len(&self) -> usize {
        let table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        table.values.len()
    }
}

impl<T: ?Sized + Ord> Default for Interner<T> {
    fn default() -> Interner<T> {
        Interner::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_share_one_allocation() {
        let table = Interner::<str>::new();
        let (a, b) = (table.share("env\0prod"), table.share("env\0prod"));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &table.share("env\0dev")));
    }

    #[test]
    fn values_no_one_holds_are_swept_and_held_ones_kept() {
        let table = Interner::<String>::new();
        let held: Vec<_> = (0..10).map(|i| table.share(format!("held-{i}"))).collect();
        for i in 0..1_000 {
            drop(table.share(format!("churn-{i}")));
        }
        assert!(table.len() <= 2 * FLOOR, "{} values kept", table.len());
        for (i, value) in held.iter().enumerate() {
            assert!(Arc::ptr_eq(value, &table.share(format!("held-{i}"))));
        }
    }

    #[test]
    fn the_table_grows_with_the_values_held() {
        let table = Interner::<String>::new();
        let held: Vec<_> = (0..100).map(|i| table.share(i.to_string())).collect();
        assert_eq!(table.len(), held.len());
    }
}
