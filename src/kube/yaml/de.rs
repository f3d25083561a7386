//! A node tree decoded into typed structs by serde, as client-go's JSON decoding does it: a
//! boolean or a number where a string is expected is refused (kubectl refuses `namespace: no`
//! and an unquoted `8080` exec argument). Every error carries the line and the field's path
//! (`users[0].user.exec.args[1]`) and names the kinds involved, never the value.

use super::{Data, Node, YamlError};
use serde::de::value::{BorrowedStrDeserializer, MapDeserializer, SeqDeserializer};
use serde::de::{self, Expected, IntoDeserializer, Unexpected, Visitor};
use std::fmt;

pub(super) struct NodeDeserializer<'a, 'p> {
    node: &'a Node,
    path: Path<'p>,
}

/// Where a node sits, written out only when an error names it.
#[derive(Clone, Copy)]
enum Path<'p> {
    Root,
    Key(&'p Path<'p>, &'p str),
    Index(&'p Path<'p>, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Key(Path::Root, key) => f.write_str(key),
            Path::Key(parent, key) => write!(f, "{parent}.{key}"),
            Path::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

impl<'a> NodeDeserializer<'a, '_> {
    pub(super) fn root(node: &'a Node) -> Self {
        NodeDeserializer {
            node,
            path: Path::Root,
        }
    }

    /// Places an error raised while decoding this node (the innermost node places it).
    fn locate(&self, mut error: YamlError) -> YamlError {
        if error.line == 0 {
            error.line = self.node.line;
            error.field = Some(self.path.to_string()).filter(|p| !p.is_empty());
        }
        error
    }
}

impl de::Error for YamlError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        YamlError::at(0, message.to_string())
    }

    fn invalid_type(found: Unexpected, expected: &dyn Expected) -> Self {
        let expected = expected.to_string();
        let hint = match found {
            Unexpected::Bool(_) if expected.contains("string") => {
                "; YAML 1.1 reads yes/no/on/off/y/n/true/false unquoted as booleans: quote the value, as kubectl requires"
            }
            Unexpected::Signed(_) | Unexpected::Unsigned(_) | Unexpected::Float(_)
                if expected.contains("string") =>
            {
                "; quote the value, as kubectl requires"
            }
            Unexpected::Str(_) if expected.contains("bool") => {
                "; write true or false without quotes"
            }
            _ => "; fix the value's type",
        };
        YamlError::at(
            0,
            format!("expected {expected}, found {}{hint}", kind(&found)),
        )
    }

    fn invalid_value(found: Unexpected, expected: &dyn Expected) -> Self {
        YamlError::at(0, format!("expected {expected}, found {}", kind(&found)))
    }

    fn unknown_variant(_: &str, expected: &'static [&'static str]) -> Self {
        YamlError::at(0, format!("expected one of {}", expected.join(", ")))
    }
}

/// What a value is, without the value.
fn kind(found: &Unexpected) -> &'static str {
    match found {
        Unexpected::Bool(_) => "a boolean",
        Unexpected::Signed(_) | Unexpected::Unsigned(_) | Unexpected::Float(_) => "a number",
        Unexpected::Str(_) | Unexpected::Char(_) => "a string",
        Unexpected::Unit => "null",
        Unexpected::Seq => "a list",
        Unexpected::Map => "a map",
        _ => "another kind of value",
    }
}

impl<'de> de::Deserializer<'de> for NodeDeserializer<'de, '_> {
    type Error = YamlError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, YamlError> {
        let result = match &self.node.data {
            Data::Null => visitor.visit_unit(),
            Data::Bool(b) => visitor.visit_bool(*b),
            Data::Int(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => visitor.visit_u64(u),
                (None, Some(i)) => visitor.visit_i64(i),
                _ => visitor.visit_f64(n.as_f64().unwrap_or_default()),
            },
            Data::Float(f) if f.is_finite() => visitor.visit_f64(*f),
            Data::Float(_) => Err(YamlError::at(
                0,
                ".nan and .inf have no JSON form, so kubectl refuses them; quote the value",
            )),
            Data::Str(s) => visitor.visit_borrowed_str(s),
            Data::Seq(items) => visitor.visit_seq(SeqDeserializer::new(
                items.iter().enumerate().map(|(i, node)| NodeDeserializer {
                    node,
                    path: Path::Index(&self.path, i),
                }),
            )),
            Data::Map(entries) => {
                visitor.visit_map(MapDeserializer::new(entries.iter().map(|(key, node)| {
                    let value = NodeDeserializer {
                        node,
                        path: Path::Key(&self.path, key),
                    };
                    (BorrowedStrDeserializer::new(key), value)
                })))
            }
        };
        result.map_err(|e| self.locate(e))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, YamlError> {
        match self.node.data {
            Data::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, YamlError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, YamlError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct enum identifier
    }
}

impl<'de, 'p> IntoDeserializer<'de, YamlError> for NodeDeserializer<'de, 'p> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}
