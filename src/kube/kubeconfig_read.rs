//! One kubeconfig file read as client-go reads it: YAML (or JSON) into the kubeconfig types,
//! each entry with the file and line it came from, so every later refusal can point at it.
//! A file with no document (empty, only comments or `---`) is an empty kubeconfig, and two
//! entries of one list with the same name are refused, as kubectl refuses them.

use super::config_error::ConfigError;
use super::kubeconfig_file::{
    ClusterEntry, ContextEntry, KubeconfigFile, Located, Named, UserEntry,
};
use super::yaml::{self, Data, Node};
use std::path::Path;

/// A file's entries, located, and its `current-context`.
#[derive(Debug, Default)]
pub(super) struct FileEntries {
    pub(super) clusters: Vec<Located<ClusterEntry>>,
    pub(super) users: Vec<Located<UserEntry>>,
    pub(super) contexts: Vec<Located<ContextEntry>>,
    pub(super) current_context: Option<String>,
}

pub(super) fn read(text: &[u8], path: &Path) -> Result<FileEntries, ConfigError> {
    let yaml_error = |error: yaml::YamlError| ConfigError::Yaml {
        path: path.to_owned(),
        error: error.to_string(),
    };
    let root = yaml::document(text).map_err(yaml_error)?;
    let Some(root) = root.filter(|root| root.data != Data::Null) else {
        return Ok(FileEntries::default());
    };
    let file: KubeconfigFile = yaml::decode(&root).map_err(yaml_error)?;
    let list = |key| item_lines(root.get(key));
    Ok(FileEntries {
        clusters: locate(file.clusters, &list("clusters"), path, "clusters")?,
        users: locate(file.users, &list("users"), path, "users")?,
        contexts: locate(file.contexts, &list("contexts"), path, "contexts")?,
        current_context: file.current_context,
    })
}

/// The line of each item of a list node.
fn item_lines(list: Option<&Node>) -> Vec<usize> {
    match list.map(|l| &l.data) {
        Some(Data::Seq(items)) => items.iter().map(|i| i.line).collect(),
        _ => Vec::new(),
    }
}

fn locate<T: Default>(
    entries: Option<Vec<Named<T>>>,
    lines: &[usize],
    path: &Path,
    list: &str,
) -> Result<Vec<Located<T>>, ConfigError> {
    let dir = path.parent().map(Path::to_owned).unwrap_or_default();
    let mut located: Vec<Located<T>> = Vec::new();
    for (i, named) in entries.unwrap_or_default().into_iter().enumerate() {
        let line = lines.get(i).copied().unwrap_or(1);
        let name = named.name.unwrap_or_default();
        if let Some(first) = located.iter().find(|e| e.name == name) {
            return Err(ConfigError::Invalid(format!(
                "kubeconfig {}, line {line}: {list} has a second entry named {name:?} (the first is at line {}); kubectl refuses this too: rename or remove one",
                path.display(),
                first.line
            )));
        }
        located.push(Located {
            name,
            entry: named.entry.unwrap_or_default(),
            dir: dir.clone(),
            file: path.to_owned(),
            line,
        });
    }
    Ok(located)
}
