//! The inline parts of a YAML line: mapping keys, quoted and plain scalars, and flow
//! collections (`[a, b]`, `{k: v}`), which may have been joined from several lines.

use super::{YamlError, error};
use serde_json::{Map, Value};

/// `key: rest` (or `key:`) when `text` starts with a mapping key: the key and what follows.
pub(super) fn mapping_key(text: &str, number: usize) -> Result<Option<(String, &str)>, YamlError> {
    if text.starts_with("? ") || text == "?" {
        return error(number, "complex mapping keys (`?`) are not supported");
    }
    let (key, after) = if text.starts_with(['"', '\'']) {
        let mut cursor = Cursor::new(text, number);
        let key = cursor.quoted()?;
        (key, &text[cursor.at..])
    } else if text.starts_with(['[', '{', '-']) && !text.starts_with("-:") {
        return Ok(None);
    } else {
        match key_end(text) {
            Some(end) => (text[..end].trim_end().to_owned(), &text[end..]),
            None => return Ok(None),
        }
    };
    let after = after.trim_start();
    let Some(rest) = after.strip_prefix(':') else {
        return Ok(None);
    };
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return Ok(None);
    }
    Ok(Some((key, rest.trim_start())))
}

/// Where a plain key ends: the first `:` followed by a space or the end of the line.
fn key_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    (0..bytes.len()).find(|&i| bytes[i] == b':' && bytes.get(i + 1).is_none_or(|&b| b == b' '))
}

/// Whether `text` holds a whole value: no quoted scalar or flow collection left open.
pub(super) fn complete(text: &str) -> Result<bool, YamlError> {
    if !text.starts_with(['"', '\'', '[', '{']) {
        return Ok(true);
    }
    let (mut depth, mut quote, mut chars) = (0usize, None, text.chars().peekable());
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some('"'), '\\') => {
                chars.next();
            }
            (Some('\''), '\'') if chars.peek() == Some(&'\'') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(quote.is_none() && depth == 0)
}

/// The value `text` holds: a flow collection, a quoted scalar or a plain scalar.
pub(super) fn value(text: &str, number: usize) -> Result<Value, YamlError> {
    let mut cursor = Cursor::new(text, number);
    let value = cursor.node(false)?;
    cursor.skip_spaces();
    if cursor.at < text.len() {
        return error(
            number,
            format!("unexpected {:?} after a value", &text[cursor.at..]),
        );
    }
    Ok(value)
}

/// A plain scalar's value: null, a boolean, or a string.
fn plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ => Value::String(text.to_owned()),
    }
}

struct Cursor<'a> {
    text: &'a str,
    at: usize,
    number: usize,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str, number: usize) -> Cursor<'a> {
        Cursor {
            text,
            at: 0,
            number,
        }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn skip_spaces(&mut self) {
        while self.peek() == Some(' ') {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: char) -> bool {
        let found = self.peek() == Some(c);
        if found {
            self.at += c.len_utf8();
        }
        found
    }

    fn fail<T>(&self, message: impl Into<String>) -> Result<T, YamlError> {
        error(self.number, message)
    }

    /// One node; `in_flow`: inside a collection, where `,` `]` `}` end a plain scalar.
    fn node(&mut self, in_flow: bool) -> Result<Value, YamlError> {
        self.skip_spaces();
        match self.peek() {
            Some('[') => self.sequence(),
            Some('{') => self.mapping(),
            Some('"' | '\'') => self.quoted().map(Value::String),
            Some('&' | '*' | '!') => self.fail("anchors, aliases and tags are not supported"),
            Some('|' | '>') if in_flow => self.fail("a block scalar cannot stand inside [] or {}"),
            Some('@' | '`') => self.fail("a plain value cannot start with @ or `; quote it"),
            _ => Ok(plain(self.plain(in_flow, false))),
        }
    }

    fn sequence(&mut self) -> Result<Value, YamlError> {
        let mut items = Vec::new();
        self.collection(['[', ']'], "[...] sequence", |cursor| {
            items.push(cursor.node(true)?);
            Ok(())
        })?;
        Ok(Value::Array(items))
    }

    fn mapping(&mut self) -> Result<Value, YamlError> {
        let mut map = Map::new();
        self.collection(['{', '}'], "{...} mapping", |cursor| {
            let (key, value) = cursor.mapping_entry()?;
            map.insert(key, value);
            Ok(())
        })?;
        Ok(Value::Object(map))
    }

    /// A flow collection between `open` and `close` (a `what`, as errors name it): `entry`
    /// reads each entry, and after one a `,` or `close` must follow.
    fn collection(
        &mut self,
        [open, close]: [char; 2],
        what: &str,
        mut entry: impl FnMut(&mut Self) -> Result<(), YamlError>,
    ) -> Result<(), YamlError> {
        self.eat(open);
        loop {
            self.skip_spaces();
            if self.eat(close) {
                return Ok(());
            }
            entry(self)?;
            self.skip_spaces();
            if !self.eat(',') && self.peek() != Some(close) {
                return self.fail(format!("a `,` or `{close}` was expected in a {what}"));
            }
        }
    }

    /// `key: value` in a `{...}` mapping; a key without a value maps to null.
    fn mapping_entry(&mut self) -> Result<(String, Value), YamlError> {
        let key = match self.peek() {
            Some('"' | '\'') => self.quoted()?,
            _ => self.plain(true, true).to_owned(),
        };
        self.skip_spaces();
        let value = if self.eat(':') {
            self.skip_spaces();
            match self.peek() {
                Some(',' | '}') => Value::Null,
                _ => self.node(true)?,
            }
        } else {
            Value::Null
        };
        Ok((key, value))
    }

    /// A plain scalar up to the end, or in a collection up to `,` `]` `}` (and for a key
    /// up to a `:` followed by a space or an indicator).
    fn plain(&mut self, in_flow: bool, key: bool) -> &'a str {
        let start = self.at;
        let bytes = self.text.as_bytes();
        while self.at < bytes.len() {
            let b = bytes[self.at];
            let next = bytes.get(self.at + 1).copied();
            let ends_key =
                key && b == b':' && next.is_none_or(|n| matches!(n, b' ' | b',' | b'}' | b']'));
            if ends_key || (in_flow && matches!(b, b',' | b']' | b'}')) {
                break;
            }
            self.at += 1;
        }
        self.text[start..self.at].trim_end()
    }

    /// A single- or double-quoted scalar, the cursor on its opening quote.
    fn quoted(&mut self) -> Result<String, YamlError> {
        let quote = self.peek().unwrap_or('"');
        self.at += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return self.fail(format!("a quoted value is not closed with {quote}"));
            };
            self.at += c.len_utf8();
            match c {
                '\'' if quote == '\'' && self.eat('\'') => out.push('\''),
                c if c == quote => return Ok(out),
                '\\' if quote == '"' => out.push(self.escape()?),
                c => out.push(c),
            }
        }
    }

    fn escape(&mut self) -> Result<char, YamlError> {
        let Some(c) = self.peek() else {
            return self.fail("a `\\` ends a quoted value");
        };
        self.at += c.len_utf8();
        let hex = |cursor: &mut Self, digits: usize| {
            let code = cursor.text.get(cursor.at..cursor.at + digits);
            let code = code.and_then(|h| u32::from_str_radix(h, 16).ok());
            cursor.at += digits;
            code.and_then(char::from_u32)
        };
        let decoded = match c {
            '0' => Some('\0'),
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            't' | '\t' => Some('\t'),
            'n' => Some('\n'),
            'v' => Some('\x0b'),
            'f' => Some('\x0c'),
            'r' => Some('\r'),
            'e' => Some('\x1b'),
            ' ' | '"' | '/' | '\\' => Some(c),
            'N' => Some('\u{85}'),
            '_' => Some('\u{a0}'),
            'L' => Some('\u{2028}'),
            'P' => Some('\u{2029}'),
            'x' => hex(self, 2),
            'u' => hex(self, 4),
            'U' => hex(self, 8),
            _ => None,
        };
        decoded.map_or_else(
            || self.fail(format!("unknown escape `\\{c}` in a quoted value")),
            Ok,
        )
    }
}
