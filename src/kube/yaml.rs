//! The YAML that kubeconfigs are written in, read into JSON values and then into typed structs
//! by serde: a small parser of our own instead of a general YAML library, which was 0.46 MB of
//! the static binary for a file read once at start.
//!
//! It reads one document of block mappings and sequences (a sequence may sit at its key's
//! indentation, as kubectl writes it), flow collections (`{}`, `[a, b]`, `{cluster: c}`), plain
//! scalars over several lines, single- and double-quoted scalars, literal and folded block
//! scalars with chomping and indentation indicators, and comments. Plain `null`, `~` and an empty
//! value are null, `true` and `false` booleans, anything else a string (no field of a
//! kubeconfig is a number). Anchors, aliases, tags, complex keys and several documents are
//! refused with an error naming the line, as are tabs in indentation.

mod flow;
mod lines;

use lines::Line;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::fmt;

/// Where and why a document could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for YamlError {}

pub(crate) fn error<T>(line: usize, message: impl Into<String>) -> Result<T, YamlError> {
    Err(YamlError {
        line,
        message: message.into(),
    })
}

/// Reads `text` as YAML into `T`.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    let value = to_value(text)?;
    serde_json::from_value(value).map_err(|e| YamlError {
        line: 0,
        message: e.to_string(),
    })
}

/// Reads `text` as YAML into a JSON value (an empty document is null).
pub fn to_value(text: &str) -> Result<Value, YamlError> {
    let lines = lines::split(text)?;
    let mut parser = Parser { lines, at: 0 };
    parser.skip_blank();
    let value = match parser.current() {
        Some(line) => parser.node(line.indent, line.number)?,
        None => Value::Null,
    };
    parser.skip_blank();
    if let Some(line) = parser.current() {
        return error(line.number, "unexpected content after the document's end");
    }
    Ok(value)
}

struct Parser {
    lines: Vec<Line>,
    at: usize,
}

impl Parser {
    fn current(&self) -> Option<&Line> {
        self.lines.get(self.at)
    }

    fn skip_blank(&mut self) {
        while self.current().is_some_and(|l| l.text.is_empty()) {
            self.at += 1;
        }
    }

    /// The node whose first line is the current one, at `indent`.
    fn node(&mut self, indent: usize, number: usize) -> Result<Value, YamlError> {
        let Some(line) = self.current() else {
            return error(number, "a value was expected");
        };
        if is_sequence_item(&line.text) {
            return self.sequence(indent);
        }
        if flow::mapping_key(&line.text, line.number)?.is_some() {
            return self.mapping(indent);
        }
        let line = line.clone();
        self.at += 1;
        self.inline_value(&line.text, indent, line.number)
    }

    fn sequence(&mut self, indent: usize) -> Result<Value, YamlError> {
        let mut items = Vec::new();
        while let Some(line) = self
            .current()
            .filter(|l| l.indent == indent && is_sequence_item(&l.text))
        {
            let number = line.number;
            let rest = line.text[1..].trim_start().to_owned();
            let nests = is_sequence_item(&rest) || flow::mapping_key(&rest, number)?.is_some();
            if rest.is_empty() {
                self.at += 1;
                items.push(self.nested(indent, false)?);
            } else if nests {
                // `- key: value` starts a node as if its text stood where the text begins.
                let offset = line.text.len() - rest.len();
                self.lines[self.at].indent = indent + offset;
                self.lines[self.at].text = rest;
                items.push(self.node(indent + offset, number)?);
            } else {
                self.at += 1;
                items.push(self.scalar_or_flow(&rest, indent, number)?);
            }
            self.skip_blank();
        }
        self.end_of_block(indent)?;
        Ok(Value::Array(items))
    }

    fn mapping(&mut self, indent: usize) -> Result<Value, YamlError> {
        let mut map = Map::new();
        while let Some(line) = self.current().filter(|l| l.indent == indent) {
            let line = line.clone();
            let Some((key, rest)) = flow::mapping_key(&line.text, line.number)? else {
                return error(line.number, "a mapping key (`key: value`) was expected");
            };
            if map.contains_key(&key) {
                return error(line.number, format!("the key {key:?} appears twice"));
            }
            self.at += 1;
            let value = if rest.is_empty() {
                self.nested(indent, true)?
            } else {
                self.scalar_or_flow(rest, indent, line.number)?
            };
            map.insert(key, value);
            self.skip_blank();
        }
        self.end_of_block(indent)?;
        Ok(Value::Object(map))
    }

    /// The value on the lines after a `key:` or `-` with nothing after it: a more indented
    /// node, a sequence at the key's own indentation, or null.
    fn nested(&mut self, indent: usize, after_key: bool) -> Result<Value, YamlError> {
        self.skip_blank();
        match self.current() {
            Some(l) if l.indent > indent => {
                let (indent, number) = (l.indent, l.number);
                self.node(indent, number)
            }
            Some(l) if after_key && l.indent == indent && is_sequence_item(&l.text) => {
                self.sequence(indent)
            }
            _ => Ok(Value::Null),
        }
    }

    /// The value after a key or a dash on the same line: a block scalar, or an inline value.
    fn scalar_or_flow(
        &mut self,
        text: &str,
        indent: usize,
        number: usize,
    ) -> Result<Value, YamlError> {
        if text.starts_with(['|', '>']) {
            self.block_scalar(text, indent, number)
        } else {
            self.inline_value(text, indent, number)
        }
    }

    /// A flow collection, quoted or plain scalar starting with `text`, continued on the lines
    /// indented deeper than `indent` as long as it is not complete.
    fn inline_value(
        &mut self,
        text: &str,
        indent: usize,
        number: usize,
    ) -> Result<Value, YamlError> {
        let mut joined = text.to_owned();
        while !flow::complete(&joined)? || self.continues_plain(&joined, indent) {
            let Some(next) = self
                .current()
                .filter(|l| l.indent > indent || l.text.is_empty())
            else {
                break;
            };
            let separator = if next.text.is_empty() { "\n" } else { " " };
            if !(separator == " " && joined.ends_with('\n')) {
                joined.push_str(separator);
            }
            joined.push_str(&next.text);
            self.at += 1;
        }
        flow::value(joined.trim_end(), number)
    }

    /// Whether the next line carries on a plain scalar (a multi-line plain value).
    fn continues_plain(&self, joined: &str, indent: usize) -> bool {
        let plain = !joined.starts_with(['"', '\'', '{', '[']);
        let next = self
            .current()
            .filter(|l| l.indent > indent && !l.text.is_empty());
        plain
            && next.is_some_and(|l| {
                flow::mapping_key(&l.text, l.number)
                    .ok()
                    .flatten()
                    .is_none()
            })
    }

    /// `|` or `>` with its indicators, and the lines indented deeper than `indent`.
    fn block_scalar(
        &mut self,
        header: &str,
        indent: usize,
        number: usize,
    ) -> Result<Value, YamlError> {
        let (literal, indicators) = (header.starts_with('|'), &header[1..]);
        let keep = indicators.contains('+');
        let strip = indicators.contains('-');
        let explicit = indicators.chars().find_map(|c| c.to_digit(10));
        if indicators
            .chars()
            .any(|c| !matches!(c, '+' | '-' | '0'..='9'))
        {
            return error(
                number,
                format!("unsupported block scalar header {header:?}"),
            );
        }
        let mut content = Vec::new();
        let mut block_indent = explicit.map(|n| indent + n as usize);
        while let Some(line) = self.current() {
            if line.raw_text().trim().is_empty() {
                content.push(String::new());
                self.at += 1;
                continue;
            }
            let at = *block_indent.get_or_insert(line.indent);
            if line.indent < at || line.indent <= indent {
                break;
            }
            content.push(format!(
                "{}{}",
                " ".repeat(line.indent - at),
                line.raw_text()
            ));
            self.at += 1;
        }
        let trailing = content.iter().rev().take_while(|l| l.is_empty()).count();
        content.truncate(content.len() - trailing);
        let mut text = if literal {
            content.join("\n")
        } else {
            fold(&content)
        };
        if !content.is_empty() && !strip {
            text.push('\n');
        }
        if keep {
            text.push_str(&"\n".repeat(trailing));
        }
        Ok(Value::String(text))
    }

    /// After a block: a line indented between its parent and it would be ambiguous.
    fn end_of_block(&self, indent: usize) -> Result<(), YamlError> {
        match self.current() {
            Some(l) if l.indent > indent => {
                error(l.number, "this line's indentation matches nothing above it")
            }
            _ => Ok(()),
        }
    }
}

fn is_sequence_item(text: &str) -> bool {
    text == "-" || text.starts_with("- ")
}

/// Folded block content: lines joined by spaces, where a run of blank lines stands for as
/// many newlines; lines indented further keep their line breaks.
fn fold(lines: &[String]) -> String {
    let mut text = String::new();
    let mut previous: Option<&str> = None;
    let mut blanks = 0;
    for line in lines {
        if line.is_empty() {
            blanks += 1;
            continue;
        }
        match previous {
            None => text.push_str(&"\n".repeat(blanks)),
            Some(p) => {
                let literal = usize::from(p.starts_with(' ') || line.starts_with(' '));
                if blanks > 0 {
                    text.push_str(&"\n".repeat(blanks + literal));
                } else {
                    text.push(if literal == 1 { '\n' } else { ' ' });
                }
            }
        }
        text.push_str(line);
        previous = Some(line);
        blanks = 0;
    }
    text
}

#[cfg(test)]
mod tests;
