//! The YAML that kubeconfigs are written in, read as kubectl reads it: libyaml's parser (the
//! parser goyaml.v2 is a port of, through the libyaml-safer crate) and goyaml.v2's YAML 1.1
//! resolution of plain scalars, which client-go applies before it decodes the JSON into its
//! types. So `yes`, `off` and `y` are booleans everywhere, `8080` a number and `~` null, and a
//! field whose type does not match is refused as kubectl refuses it.
//!
//! Why not our own parser any more: it refused much of what kubectl reads (indented JSON, BOMs,
//! anchors, tabs after a colon). Why a resolver of our own: no Rust YAML library resolves
//! scalars the YAML 1.1 way. Errors name the line and the field, never a value: tokens and
//! keys live in these files.

mod de;
mod node;
mod resolve;

use serde::de::DeserializeOwned;
use std::fmt;

/// A node of the first document, with the line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub(crate) line: usize,
    pub(crate) data: Data,
}

/// What a node holds once resolved; map keys are strings, as in the JSON client-go decodes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Data {
    Null,
    Bool(bool),
    Int(serde_json::Number),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(String, Node)>),
}

impl Node {
    /// The value at `key` of a map node.
    pub(crate) fn get(&self, key: &str) -> Option<&Node> {
        match &self.data {
            Data::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The nodes in it, itself included.
    fn size(&self) -> usize {
        1 + match &self.data {
            Data::Seq(items) => items.iter().map(Node::size).sum(),
            Data::Map(entries) => entries.iter().map(|(_, v)| 1 + v.size()).sum(),
            _ => 0,
        }
    }
}

/// Where and why a document could not be read: a line (counted from 1), the field's path
/// when the document parsed but a field has the wrong type, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub line: usize,
    pub column: Option<usize>,
    pub field: Option<String>,
    pub message: String,
}

impl YamlError {
    pub(crate) fn at(line: usize, message: impl Into<String>) -> YamlError {
        YamlError {
            line,
            column: None,
            field: None,
            message: message.into(),
        }
    }

    /// libyaml's own error: its problem and where, never the text around it.
    fn syntax(error: &libyaml_safer::Error, text: &[u8]) -> YamlError {
        let mark = error.problem_mark().or(error.context_mark());
        let line = match mark {
            Some(mark) => mark.line as usize + 1,
            // A reader error (bad UTF-8) has no mark: the line of the first bad byte.
            None => {
                let good = std::str::from_utf8(text).map_or_else(|e| e.valid_up_to(), str::len);
                text[..good].iter().filter(|b| **b == b'\n').count() + 1
            }
        };
        let context = error.context().map(|c| format!(" {c}")).unwrap_or_default();
        YamlError {
            column: mark.map(|m| m.column as usize + 1),
            ..YamlError::at(
                line,
                format!("{}{context}; fix the YAML there", error.problem()),
            )
        }
    }
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}", self.line)?;
        if let Some(column) = self.column {
            write!(f, ", column {column}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ", field {field}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for YamlError {}

/// The first document of `text` (None when it has none: empty, comments or `---` only).
pub(crate) fn document(text: &[u8]) -> Result<Option<Node>, YamlError> {
    node::first_document(text)
}

/// `node` decoded into `T` as client-go decodes its JSON (a type mismatch is an error).
pub(crate) fn decode<T: DeserializeOwned>(node: &Node) -> Result<T, YamlError> {
    T::deserialize(de::NodeDeserializer::root(node))
}

/// Reads `text` as YAML into `T` (an empty document is null).
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    match document(text.as_bytes())? {
        Some(node) => decode(&node),
        None => decode(&Node {
            line: 1,
            data: Data::Null,
        }),
    }
}

#[cfg(test)]
mod tests;
