//! The controller runtime: small and general, nothing Mirror-specific.
//!
//! Data flows one way: a [`watcher`] lists then watches a collection and emits
//! [`Change`]s → a [`store`] caches a projection of each object → a mapping function
//! turns each event into [`ObjectKey`]s → the [`queue`] deduplicates them and delays failures
//! ([`backoff`]) → the [`controller`]'s workers reconcile one key at a time. Each watcher
//! reports whether it hears its server (`hearing`), which is how a deaf leader is found. A
//! [`Runnable`] is how a controller is started and stopped with each term of leadership.
pub mod backoff;
pub mod change;
pub mod controller;
pub mod fair;
mod hearing;
mod interner;
pub mod list_watch;
mod listed_page;
pub mod queue;
pub mod recovery;
pub mod runnable;
pub mod source;
mod spawn;
pub mod store;
pub mod watcher;
mod watcher_config;

pub use backoff::Backoff;
pub use change::Change;
pub use controller::{Action, Controller, feed, object_keys};
pub use interner::Interner;
pub use list_watch::{EventStream, ListWatch};
pub use queue::WorkQueue;
pub use recovery::Recovery;
pub use runnable::Runnable;
pub use source::ApiSource;
pub use spawn::{regardless, spawn_watch};
pub use store::{ObjectKey, Store};
pub use watcher::{Watcher, WatcherConfig};
