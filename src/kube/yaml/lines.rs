//! A YAML document as lines: each line's indentation, its text without a trailing comment (for
//! structure) and as written (for block scalars), and its number for errors.

use super::{YamlError, error};

#[derive(Debug, Clone)]
pub(super) struct Line {
    pub(super) number: usize,
    pub(super) indent: usize,
    /// Without a trailing comment or trailing spaces; empty for a blank or comment-only line.
    pub(super) text: String,
    raw: String,
}

impl Line {
    /// The line after its indentation, comments included (block scalar content).
    pub(super) fn raw_text(&self) -> &str {
        &self.raw
    }
}

/// The lines of the one document in `text`: directives and a leading `---` are dropped, a
/// second document is refused.
pub(super) fn split(text: &str) -> Result<Vec<Line>, YamlError> {
    let mut lines = Vec::new();
    let mut started = false;
    let mut ended = false;
    for (i, raw) in text.lines().enumerate() {
        let number = i + 1;
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let content = raw.trim_start_matches(' ');
        let indent = raw.len() - content.len();
        if content.starts_with('\t') && !content.trim().is_empty() {
            return error(
                number,
                "tabs are not allowed in indentation; indent with spaces",
            );
        }
        let text = strip_comment(content).trim_end().to_owned();
        if indent == 0 && (text == "---" || text.starts_with("--- ")) {
            if started {
                return error(
                    number,
                    "a kubeconfig holds one YAML document; remove the second",
                );
            }
            started = true;
            if text == "---" {
                continue;
            }
            return error(number, "put the document's content on the line after `---`");
        }
        if indent == 0 && text == "..." {
            ended = true;
            continue;
        }
        if !started && lines.is_empty() && text.starts_with('%') {
            continue;
        }
        if ended && !text.is_empty() {
            return error(number, "content after the document's end (`...`)");
        }
        if !text.is_empty() {
            started = true;
        }
        lines.push(Line {
            number,
            indent,
            text,
            raw: content.to_owned(),
        });
    }
    Ok(lines)
}

/// `content` without a comment: a `#` at its start or after a space, outside quoted scalars.
fn strip_comment(content: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut value_start = true;
    let mut previous = ' ';
    let mut chars = content.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match quote {
            Some('"') if c == '\\' => {
                chars.next();
            }
            Some(q) if c == q => {
                let doubled = q == '\'' && chars.peek().is_some_and(|&(_, n)| n == '\'');
                if doubled {
                    chars.next();
                } else {
                    quote = None;
                }
            }
            Some(_) => {}
            None if c == '#' && previous.is_whitespace() => return &content[..i],
            None if value_start && (c == '"' || c == '\'') => quote = Some(c),
            None => {}
        }
        value_start = match c {
            '[' | '{' | ',' => true,
            ':' | '-' => chars.peek().is_none_or(|&(_, n)| n == ' '),
            ' ' => value_start,
            _ => false,
        };
        previous = c;
    }
    content
}
