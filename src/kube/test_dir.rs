//! A fresh temp dir for the config-loading unit tests (kubeconfigs, token files, CAs).

use std::path::PathBuf;

/// `<temp>/skiff-<tag>-<pid>-<nanos>`, created empty. Tests leave it for the OS to clean.
pub fn temp_dir(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let dir = std::env::temp_dir().join(format!("skiff-{tag}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create a temp dir");
    dir
}
