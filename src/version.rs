//! The version skiff reports: `skiff --version`, the start log line and `skiff_build_info`.
//!
//! The revision is the git commit the binary was built from (baked in by `build.rs`), so a
//! running replica can be matched to its source; "unknown" when built outside git.

/// The crate version from Cargo.toml.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The short git commit hash at build time, or "unknown".
pub const REVISION: &str = match option_env!("SKIFF_GIT_REVISION") {
    Some(revision) => revision,
    None => "unknown",
};

/// `skiff 0.1.0 (revision 0123456789ab)`
pub fn describe() -> String {
    format!("skiff {VERSION} (revision {REVISION})")
}

/// Sets `skiff_build_info{version,revision} 1`, as Prometheus build-info gauges do.
pub fn register_build_info() {
    crate::metrics::gauge(
        "skiff_build_info",
        "The version and git revision skiff was built from; always 1.",
        &[("version", VERSION), ("revision", REVISION)],
    )
    .set(1.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_info_is_one_series_labelled_with_version_and_revision() {
        register_build_info();
        let text = crate::metrics::render();
        let line = format!("skiff_build_info{{version=\"{VERSION}\",revision=\"{REVISION}\"}} 1");
        assert!(text.contains(&line), "{text}");
        assert!(describe().contains(VERSION) && describe().contains(REVISION));
    }
}
