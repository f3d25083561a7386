//! One YAML document as a tree of nodes with their lines, built from libyaml's events as
//! goyaml.v2 builds it: aliases are copies of their anchor's node, `<<` merge keys copy a
//! mapping's (or a list of mappings') entries, a repeated key keeps its last value, map keys
//! are turned into strings as sigs.k8s.io/yaml does, and only the first document is read.

use super::{Data, Node, YamlError, resolve};
use libyaml_safer::{Event, EventData, Parser, ScalarStyle};
use std::borrow::Cow;
use std::collections::HashMap;

/// Deeper than any kubeconfig; bounds the recursion on hostile input.
const MAX_DEPTH: usize = 256;
/// Nodes a document may expand to through aliases (a "billion laughs" stops here).
const MAX_NODES: usize = 200_000;
const BOM: &[u8] = b"\xef\xbb\xbf";

/// The first document of `text` (None for a stream without one: empty, or only comments).
pub(super) fn first_document(text: &[u8]) -> Result<Option<Node>, YamlError> {
    let text = utf8(text)?;
    let (input, last_line) = with_final_break(&text);
    let bom = usize::from(text.starts_with(BOM)) * BOM.len();
    let mut parser = Parser::new();
    parser.set_input(&input[..]);
    let mut builder = Builder {
        parser,
        text: &input,
        added_break: last_line.map(|line| ((text.len() - bom) as u64, line)),
        anchors: HashMap::new(),
        nodes: 0,
    };
    loop {
        let event = builder.next()?;
        match event.data {
            EventData::StreamStart { .. } => continue,
            EventData::DocumentStart { .. } => break,
            _ => return Ok(None),
        }
    }
    let first = builder.next()?;
    let root = builder.node(first, 0)?;
    builder.next()?; // the document's end: what follows it must still be well-formed
    Ok(Some(root))
}

/// UTF-16 (with its BOM, as Windows PowerShell writes files) as UTF-8; UTF-8 as it is.
fn utf8(text: &[u8]) -> Result<Cow<'_, [u8]>, YamlError> {
    let big_endian = match text {
        [0xfe, 0xff, ..] => true,
        [0xff, 0xfe, ..] => false,
        _ => return Ok(Cow::Borrowed(text)),
    };
    let units = text[2..].chunks(2).map(|pair| match (pair, big_endian) {
        ([a, b], true) => u16::from_be_bytes([*a, *b]),
        ([a, b], false) => u16::from_le_bytes([*a, *b]),
        _ => 0xfffd,
    });
    let decoded: Result<String, _> = char::decode_utf16(units).collect();
    decoded
        .map(|s| Cow::Owned(s.into_bytes()))
        .map_err(|_| YamlError::at(1, "the file is not valid UTF-16; save it as UTF-8"))
}

/// `text` ending in a line break, and the last line when one was added: libyaml-safer panics
/// on a block scalar that runs to the end of input with no final break, and with one added,
/// [`drop_added_break`] takes back the newline the scalar gains.
fn with_final_break(text: &[u8]) -> (Cow<'_, [u8]>, Option<String>) {
    if text.is_empty() || text.ends_with(b"\n") || text.ends_with(b"\r") {
        return (Cow::Borrowed(text), None);
    }
    let last_line = text
        .rsplit(|b| matches!(b, b'\n' | b'\r'))
        .next()
        .unwrap_or_default();
    let last_line = String::from_utf8_lossy(last_line).into_owned();
    let mut owned = text.to_vec();
    owned.push(b'\n');
    (Cow::Owned(owned), Some(last_line))
}

/// A block scalar that ran to the end of the input ends without a newline when the input's
/// last line (which had none) was part of it, as libyaml reads it.
fn drop_added_break(value: &mut String, last_line: &str) {
    let Some(content) = value.strip_suffix('\n') else {
        return;
    };
    let own_line = content.rsplit('\n').next().unwrap_or_default();
    let blank = last_line.trim_matches([' ', '\t']).is_empty();
    if !blank || (!own_line.is_empty() && last_line.ends_with(own_line)) {
        value.pop();
    }
}

struct Builder<'a> {
    parser: Parser<&'a [u8]>,
    text: &'a [u8],
    /// Where a line break was added (as marks count: without the UTF-8 BOM), and the line
    /// it ends.
    added_break: Option<(u64, String)>,
    anchors: HashMap<String, Node>,
    nodes: usize,
}

impl Builder<'_> {
    fn next(&mut self) -> Result<Event, YamlError> {
        self.parser
            .parse()
            .map_err(|e| YamlError::syntax(&e, self.text))
    }

    fn node(&mut self, event: Event, depth: usize) -> Result<Node, YamlError> {
        let line = event.start_mark.line as usize + 1;
        if depth > MAX_DEPTH {
            return Err(YamlError::at(
                line,
                "nesting is too deep; flatten the document",
            ));
        }
        self.count(1, line)?;
        let (anchor, data) = match event.data {
            EventData::Alias { anchor } => return self.alias(&anchor, line),
            EventData::Scalar {
                anchor,
                tag,
                mut value,
                style,
                ..
            } => {
                let block = matches!(style, ScalarStyle::Literal | ScalarStyle::Folded);
                if let Some((at, last_line)) = &self.added_break
                    && block
                    && event.end_mark.index >= *at
                {
                    drop_added_break(&mut value, last_line);
                }
                let plain = style == ScalarStyle::Plain;
                (anchor, resolve::scalar(value, plain, tag.as_deref(), line)?)
            }
            EventData::SequenceStart { anchor, .. } => (anchor, self.sequence(depth)?),
            EventData::MappingStart { anchor, .. } => (anchor, self.mapping(depth)?),
            _ => return Err(YamlError::at(line, "a value was expected")),
        };
        let node = Node { line, data };
        if let Some(anchor) = anchor {
            self.anchors.insert(anchor, node.clone());
        }
        Ok(node)
    }

    fn alias(&mut self, anchor: &str, line: usize) -> Result<Node, YamlError> {
        let Some(node) = self.anchors.get(anchor) else {
            return Err(YamlError::at(
                line,
                "an alias names an anchor not defined above it; define the anchor (&name) first",
            ));
        };
        let node = Node {
            line,
            data: node.data.clone(),
        };
        self.count(node.size(), line)?;
        Ok(node)
    }

    fn count(&mut self, nodes: usize, line: usize) -> Result<(), YamlError> {
        self.nodes += nodes;
        if self.nodes > MAX_NODES {
            return Err(YamlError::at(
                line,
                "aliases expand the document past 200000 nodes; write it without them",
            ));
        }
        Ok(())
    }

    fn sequence(&mut self, depth: usize) -> Result<Data, YamlError> {
        let mut items = Vec::new();
        loop {
            let event = self.next()?;
            if event.data == EventData::SequenceEnd {
                return Ok(Data::Seq(items));
            }
            items.push(self.node(event, depth + 1)?);
        }
    }

    fn mapping(&mut self, depth: usize) -> Result<Data, YamlError> {
        let mut entries: Vec<(String, Node)> = Vec::new();
        loop {
            let event = self.next()?;
            if event.data == EventData::MappingEnd {
                return Ok(Data::Map(entries));
            }
            let merge = is_merge_key(&event.data);
            let key = self.node(event, depth + 1)?;
            let value_event = self.next()?;
            let value = self.node(value_event, depth + 1)?;
            if merge {
                merge_into(&mut entries, value)?;
            } else {
                insert(&mut entries, key_text(key)?, value);
            }
        }
    }
}

/// A plain, untagged `<<` (a quoted one is an ordinary key).
fn is_merge_key(data: &EventData) -> bool {
    matches!(data, EventData::Scalar { value, style: ScalarStyle::Plain, tag: None, .. } if value == "<<")
}

/// A later key replaces an earlier one, as in goyaml.v2's maps.
fn insert(entries: &mut Vec<(String, Node)>, key: String, value: Node) {
    match entries.iter_mut().find(|(k, _)| *k == key) {
        Some(entry) => entry.1 = value,
        None => entries.push((key, value)),
    }
}

/// `<<: *map` sets the map's entries here; `<<: [*a, *b]` the same, earlier maps winning.
fn merge_into(entries: &mut Vec<(String, Node)>, value: Node) -> Result<(), YamlError> {
    let line = value.line;
    let maps = match value.data {
        Data::Map(map) => vec![map],
        Data::Seq(items) => items
            .into_iter()
            .rev()
            .map(|item| match item.data {
                Data::Map(map) => Ok(map),
                _ => Err(merge_error(item.line)),
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(merge_error(line)),
    };
    for (key, value) in maps.into_iter().flatten() {
        insert(entries, key, value);
    }
    Ok(())
}

fn merge_error(line: usize) -> YamlError {
    YamlError::at(
        line,
        "a merge key (<<) takes a mapping or a list of mappings; fix what follows it",
    )
}

/// A key as sigs.k8s.io/yaml writes it into JSON: strings as they are, booleans and numbers
/// as their text, null as "null"; a list or a map cannot be a JSON key.
fn key_text(key: Node) -> Result<String, YamlError> {
    match key.data {
        Data::Str(s) => Ok(s),
        Data::Null => Ok("null".to_owned()),
        Data::Bool(b) => Ok(b.to_string()),
        Data::Int(n) => Ok(n.to_string()),
        Data::Float(f) => Ok(f.to_string()),
        Data::Seq(_) | Data::Map(_) => Err(YamlError::at(
            key.line,
            "a list or a map is used as a key; keys must be scalars",
        )),
    }
}
