//! The largest replies skiff reads: one object, a watch line, an unpaged list. Named apart
//! from the readers that enforce them ([`super::reply_limits`], [`super::list_meter`],
//! `stream.rs`) so each can name the others' limits in its errors.

/// Largest object accepted: etcd stores at most 1.5 MiB per object by default, and its JSON
/// (base64 data, escaping) is at most about twice that.
pub const MAX_OBJECT_BYTES: usize = 4 * 1024 * 1024;
/// Longest watch line: one object and the event around it.
pub const MAX_WATCH_LINE_BYTES: usize = MAX_OBJECT_BYTES + 4 * 1024;
/// Items of a LIST that asked for no page size (skiff's lists always do).
pub const MAX_UNPAGED_LIST_ITEMS: usize = 100_000;
