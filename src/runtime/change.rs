//! What a watcher reports: how the watched collection changed, and where a relist begins and
//! ends, so a consumer knows when what it was not told about is gone.

/// What the watcher reports.
#[derive(Debug, Clone, PartialEq)]
pub enum Change<K> {
    /// A relist begins: the objects `Listed` from here to `Relisted` are the complete current
    /// state. A relist that fails part-way begins again with another `Relisting`.
    Relisting,
    /// One object of the relist in progress.
    Listed(K),
    /// The relist is complete: what was known before it and not `Listed` since `Relisting` is
    /// gone.
    Relisted,
    /// An object was created or changed.
    Applied(K),
    /// An object was deleted (its last known state).
    Deleted(K),
}

impl<K> Change<K> {
    /// The events of a complete relist of `objects`, as the watcher reports one.
    pub fn relist(objects: impl IntoIterator<Item = K>) -> Vec<Change<K>> {
        let listed = objects.into_iter().map(Change::Listed);
        std::iter::once(Change::Relisting)
            .chain(listed)
            .chain(std::iter::once(Change::Relisted))
            .collect()
    }
}
