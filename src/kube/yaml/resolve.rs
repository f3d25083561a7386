//! Plain scalars resolved as goyaml.v2 resolves them (YAML 1.1), which is what client-go's
//! YAML-to-JSON conversion uses with no target type: `yes`/`no`/`on`/`off`/`y`/`n` in any of
//! goyaml's spellings are booleans, `0x1F` and `0755` integers, `1_000` and `.5` numbers, `~`
//! null. Quoted and block scalars, and `!!str`, stay strings; `!!binary` is decoded.

use super::{Data, YamlError};
use base64::Engine;

const STR: &str = "tag:yaml.org,2002:str";
const BINARY: &str = "tag:yaml.org,2002:binary";
const BOOL: &str = "tag:yaml.org,2002:bool";
const INT: &str = "tag:yaml.org,2002:int";
const FLOAT: &str = "tag:yaml.org,2002:float";
const TIMESTAMP: &str = "tag:yaml.org,2002:timestamp";

/// A scalar's value: `plain` when it was written unquoted, `tag` as the parser expanded it.
pub(super) fn scalar(
    value: String,
    plain: bool,
    tag: Option<&str>,
    line: usize,
) -> Result<Data, YamlError> {
    let tag = tag.filter(|t| *t != "!");
    match tag {
        None if plain => Ok(untagged(value)),
        None | Some(STR) => Ok(Data::Str(value)),
        Some(BINARY) => binary(&value, line),
        Some(BOOL | INT | FLOAT | TIMESTAMP) => tagged(value, tag.unwrap_or_default(), line),
        // Tags goyaml.v2 does not resolve (`!!null` among them) leave the text a string.
        Some(_) => Ok(Data::Str(value)),
    }
}

/// `!!bool`, `!!int`, `!!float`: the text must resolve to that type (an int may be a float).
fn tagged(value: String, tag: &str, line: usize) -> Result<Data, YamlError> {
    let resolved = untagged(value.clone());
    let fits = match (&resolved, tag) {
        (Data::Bool(_), BOOL) | (Data::Float(_), FLOAT) | (Data::Str(_), TIMESTAMP) => true,
        (Data::Int(n), INT) => !n.is_f64(),
        (Data::Int(n), FLOAT) => return Ok(Data::Float(n.as_f64().unwrap_or_default())),
        _ => false,
    };
    if fits {
        return Ok(resolved);
    }
    let short = tag.rsplit(':').next().unwrap_or(tag);
    Err(YamlError::at(
        line,
        format!("a value tagged !!{short} is not a {short}; fix the value or drop the tag"),
    ))
}

fn binary(value: &str, line: usize) -> Result<Data, YamlError> {
    let compact: String = value
        .chars()
        .filter(|c| !matches!(c, '\r' | '\n'))
        .collect();
    match base64::engine::general_purpose::STANDARD.decode(compact) {
        Ok(bytes) => Ok(Data::Str(String::from_utf8_lossy(&bytes).into_owned())),
        Err(_) => Err(YamlError::at(
            line,
            "a !!binary value is not valid base64; encode it with `base64`",
        )),
    }
}

/// An unquoted, untagged scalar, as goyaml.v2's `resolve("", text)`.
fn untagged(text: String) -> Data {
    match text.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => return Data::Null,
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Data::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Data::Bool(false);
        }
        ".nan" | ".NaN" | ".NAN" => return Data::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Data::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Data::Float(f64::NEG_INFINITY),
        _ => {}
    }
    let number = match text.as_bytes()[0] {
        b'.' => text.parse::<f64>().ok().map(Data::Float),
        b'0'..=b'9' | b'+' | b'-' => number(&text.replace('_', "")),
        _ => None,
    };
    number.unwrap_or(Data::Str(text))
}

/// An integer as Go's `strconv.ParseInt(text, 0, 64)` (then `ParseUint`) reads it, else a
/// float in YAML 1.1's form. (A date is neither: goyaml.v2 hands timestamps on as text.)
fn number(plain: &str) -> Option<Data> {
    if let Some(n) = integer(plain) {
        return Some(Data::Int(n));
    }
    if is_yaml_float(plain) {
        return plain.parse::<f64>().ok().map(Data::Float);
    }
    None
}

fn integer(plain: &str) -> Option<serde_json::Number> {
    let (negative, digits) = match plain.as_bytes().first()? {
        b'-' => (true, &plain[1..]),
        b'+' => (false, &plain[1..]),
        _ => (false, plain),
    };
    let lower = digits.to_ascii_lowercase();
    let (radix, body) = if let Some(hex) = lower.strip_prefix("0x") {
        (16, hex)
    } else if let Some(bin) = lower.strip_prefix("0b") {
        (2, bin)
    } else if let Some(oct) = lower.strip_prefix("0o") {
        (8, oct)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    if body.is_empty() || body.starts_with(['+', '-']) {
        return None;
    }
    let magnitude = u64::from_str_radix(body, radix).ok()?;
    if !negative {
        return Some(magnitude.into());
    }
    let value = 0i64.checked_sub_unsigned(magnitude)?;
    Some(value.into())
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`, goyaml.v2's float form.
fn is_yaml_float(text: &str) -> bool {
    let text = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", fraction)) => digits(fraction),
        Some((whole, fraction)) => digits(whole) && (fraction.is_empty() || digits(fraction)),
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}
