//! The software bill of materials `hack/sbom.sh` writes beside each image: SPDX 2.3 naming the
//! static binary by checksum, every crate linked into it as Cargo.lock pins it, and the C
//! libraries linked statically that Cargo.lock does not list (glibc, libgcc, the OpenSSL
//! hack/openssl.sh builds), each with its license.
//!
//! Why: an SBOM that misses what is statically linked (the LGPL glibc, OpenSSL) is wrong
//! exactly where scanners and license reviews look; one that lists build-time crates (cc,
//! proc macros) reports code the image does not hold.

use std::collections::BTreeMap;
use std::process::Command;

use crate::support::control_plane::say;
use crate::support::kubectl::output_ok;
use crate::support::pod::static_binary;
use serde_json::Value;

/// `name@version` → checksum of every registry package in Cargo.lock.
fn lock_packages() -> BTreeMap<String, String> {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock"))
        .expect("read Cargo.lock");
    let mut packages = BTreeMap::new();
    for block in lock.split("[[package]]").skip(1) {
        let field = |name: &str| {
            block.lines().find_map(|line| {
                let value = line.strip_prefix(name)?.strip_prefix(" = \"")?;
                Some(value.trim_end_matches('"').to_owned())
            })
        };
        if let (Some(name), Some(version), Some(checksum)) =
            (field("name"), field("version"), field("checksum"))
        {
            packages.insert(format!("{name}@{version}"), checksum);
        }
    }
    packages
}

fn sbom() -> Value {
    let output = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/hack/sbom.sh"))
        .arg(format!("{}-unknown-linux-gnu", std::env::consts::ARCH))
        .arg(static_binary())
        .output()
        .expect("run hack/sbom.sh");
    let json = output_ok("hack/sbom.sh", output);
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("not JSON ({e}):\n{json}"))
}

/// The OpenSSL releases hack/openssl.sh has built for this machine's target.
fn built_openssl_releases() -> Vec<String> {
    let dir = format!(
        "{}/target/openssl/{}-unknown-linux-gnu",
        env!("CARGO_MANIFEST_DIR"),
        std::env::consts::ARCH
    );
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir}: {e}; run make static"));
    entries
        .flatten()
        .filter(|entry| entry.path().join(".complete").is_file())
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            Some(name.split_once('-')?.0.to_owned())
        })
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
#[cfg_attr(skip_e2e, ignore = "the static binary is built with the e2e suite")]
fn sbom_lists_the_binary_its_crates_and_the_c_libraries_linked_in() {
    let sbom = sbom();
    assert_eq!(sbom["spdxVersion"], "SPDX-2.3");
    let packages = sbom["packages"].as_array().expect("packages");
    let by_id = |id: &str| {
        let id = format!("SPDXRef-{id}");
        packages
            .iter()
            .find(|p| p["SPDXID"] == id.as_str())
            .unwrap_or_else(|| panic!("no package {id} in the SBOM"))
    };
    let skiff = by_id("skiff");
    assert_eq!(skiff["versionInfo"], env!("CARGO_PKG_VERSION"));
    let binary = std::fs::read(static_binary()).expect("read the static binary");
    assert_eq!(skiff["checksums"][0]["checksumValue"], sha256_hex(&binary));

    for (name, license) in [
        ("glibc", "LGPL-2.1-or-later"),
        ("libgcc", "GPL-3.0-or-later WITH GCC-exception-3.1"),
        ("openssl", "Apache-2.0"),
    ] {
        assert_eq!(by_id(name)["licenseDeclared"], license, "{name}");
    }
    // The OpenSSL release is the one hack/openssl.sh built for the binary (its install
    // directory is target/openssl/<target>/<version>-<hash>).
    let release = by_id("openssl")["versionInfo"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let built = built_openssl_releases();
    assert!(
        built.contains(&release),
        "the SBOM names OpenSSL {release}; built: {built:?}"
    );
    let lock = lock_packages();

    let crates: Vec<&Value> = packages
        .iter()
        .filter(|p| {
            p["SPDXID"]
                .as_str()
                .is_some_and(|id| id.starts_with("SPDXRef-crate-"))
        })
        .collect();
    for krate in &crates {
        let key = format!(
            "{}@{}",
            krate["name"].as_str().unwrap(),
            krate["versionInfo"].as_str().unwrap()
        );
        let checksum = lock
            .get(&key)
            .unwrap_or_else(|| panic!("{key} is not in Cargo.lock"));
        assert_eq!(&krate["checksums"][0]["checksumValue"], checksum, "{key}");
        assert_ne!(
            krate["licenseDeclared"], "NOASSERTION",
            "{key} has no license"
        );
    }
    let names: Vec<&str> = crates.iter().filter_map(|c| c["name"].as_str()).collect();
    for linked in [
        "openssl",
        "openssl-sys",
        "serde",
        "serde_json",
        "smol",
        "async-h1",
        "argh",
    ] {
        assert!(
            names.contains(&linked),
            "{linked} is linked in but not listed: {names:?}"
        );
    }
    for build_time in ["cc", "pkg-config", "serde_derive", "syn", "openssl-src"] {
        assert!(
            !names.contains(&build_time),
            "{build_time} is not in the binary but listed"
        );
    }
    let links = sbom["relationships"].as_array().expect("relationships");
    let linked = links
        .iter()
        .filter(|r| r["relationshipType"] == "STATIC_LINK")
        .count();
    assert_eq!(
        linked,
        packages.len() - 1,
        "every package but skiff is linked into skiff"
    );
    say(&format!(
        "sbom: {} crates, glibc, libgcc and OpenSSL {release}",
        crates.len()
    ));
}
