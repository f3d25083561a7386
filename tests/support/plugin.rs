//! Exec credential plugins for tests: shell scripts that print an `ExecCredential`, count their
//! runs, and a kubeconfig whose user runs one.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

pub const EXEC_API: &str = "client.authentication.k8s.io/v1";

/// A plugin script in `dir` that records each run in `runs` (its run number is `$n`), then
/// runs `body`. The script's directory is `$here`.
pub struct Plugin {
    pub path: PathBuf,
}

impl Plugin {
    pub fn write(dir: &Path, body: &str) -> Plugin {
        let path = dir.join("credential-plugin.sh");
        let text = format!(
            "#!/bin/sh\nhere=$(dirname \"$0\")\necho run >> \"$here/runs\"\nn=$(wc -l < \"$here/runs\" | tr -d ' ')\n{body}\n"
        );
        std::fs::write(&path, text).expect("write the plugin script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("make the plugin executable");
        Plugin { path }
    }

    /// A plugin printing `token` (with `$n` expanded, e.g. `tok-$n`) that never expires.
    pub fn token(dir: &Path, token: &str) -> Plugin {
        Plugin::write(dir, &print_token(token))
    }

    /// How often it has run.
    pub fn runs(&self) -> usize {
        std::fs::read_to_string(self.path.with_file_name("runs"))
            .map(|text| text.lines().count())
            .unwrap_or(0)
    }

    /// The file `name` beside the script (markers a script body writes).
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.with_file_name(name)
    }
}

/// Shell that prints an `ExecCredential` with `token` (shell words like `$n` expand).
pub fn print_token(token: &str) -> String {
    format!(
        "echo '{{\"apiVersion\":\"{EXEC_API}\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"'\"{token}\"'\"}}}}'"
    )
}

/// A kubeconfig in `dir` for `server` (trusting `ca_pem` if given) whose user runs `plugin`;
/// `cluster_extra` lines (e.g. `proxy-url: ...`) are added to the cluster entry.
pub fn exec_kubeconfig(
    dir: &Path,
    server: &str,
    ca_pem: Option<&[u8]>,
    plugin: &Plugin,
    namespace: &str,
    cluster_extra: &[&str],
) -> PathBuf {
    let mut cluster = format!("    server: {server}\n");
    if let Some(ca) = ca_pem {
        let path = dir.join("ca.crt");
        std::fs::write(&path, ca).expect("write CA");
        cluster.push_str(&format!("    certificate-authority: {}\n", path.display()));
    }
    for line in cluster_extra {
        cluster.push_str(&format!("    {line}\n"));
    }
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n{cluster}users:\n- name: test\n  user:\n    exec:\n      apiVersion: {EXEC_API}\n      command: {}\n      interactiveMode: Never\n      installHint: the test writes this plugin itself\ncontexts:\n- name: test\n  context:\n    cluster: test\n    user: test\n    namespace: {namespace}\ncurrent-context: test\n",
        plugin.path.display()
    );
    let path = dir.join("kubeconfig");
    std::fs::write(&path, text).expect("write kubeconfig");
    path
}
