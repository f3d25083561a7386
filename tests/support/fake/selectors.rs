//! Label and field selectors as LIST and WATCH take them (`a=b,c in (x,y),!d`,
//! `metadata.name=x`).

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A label selector: every requirement must hold (comma = AND).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<Requirement>);

/// Splits on commas that are not inside a `( … )` value set.
fn split_top_level(text: &str) -> Vec<String> {
    let mut terms = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for character in text.chars() {
        match character {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                terms.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(character);
    }
    terms.push(current);
    terms
        .into_iter()
        .map(|term| term.trim().to_string())
        .filter(|term| !term.is_empty())
        .collect()
}

fn parse_requirement(term: &str) -> Result<Requirement, String> {
    if let Some((left, set)) = term.split_once('(') {
        let set = set
            .strip_suffix(')')
            .ok_or_else(|| format!("unclosed value set in {term:?}"))?;
        let values = set.split(',').map(|v| v.trim().to_string()).collect();
        let words: Vec<&str> = left.split_whitespace().collect();
        return match words.as_slice() {
            [key, "in"] => Ok(Requirement::In(key.to_string(), values)),
            [key, "notin"] => Ok(Requirement::NotIn(key.to_string(), values)),
            _ => Err(format!("unknown set operator in {term:?}")),
        };
    }
    if let Some(key) = term.strip_prefix('!') {
        return Ok(Requirement::NotExists(key.trim().to_string()));
    }
    let pair = |(key, value): (&str, &str)| (key.trim().to_string(), value.trim().to_string());
    if let Some((key, value)) = term.split_once("!=").map(pair) {
        return Ok(Requirement::NotEquals(key, value));
    }
    if let Some((key, value)) = term
        .split_once("==")
        .or_else(|| term.split_once('='))
        .map(pair)
    {
        return Ok(Requirement::Equals(key, value));
    }
    if term.contains(char::is_whitespace) {
        return Err(format!("cannot parse label requirement {term:?}"));
    }
    Ok(Requirement::Exists(term.to_string()))
}

impl LabelSelector {
    pub fn parse(text: &str) -> Result<LabelSelector, String> {
        split_top_level(text)
            .iter()
            .map(|term| parse_requirement(term))
            .collect::<Result<Vec<_>, _>>()
            .map(LabelSelector)
    }

    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels");
        let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
        self.0.iter().all(|requirement| match requirement {
            Requirement::Equals(key, value) => label(key) == Some(value.as_str()),
            Requirement::NotEquals(key, value) => label(key) != Some(value.as_str()),
            Requirement::In(key, values) => {
                label(key).is_some_and(|l| values.iter().any(|v| v == l))
            }
            Requirement::NotIn(key, values) => {
                !label(key).is_some_and(|l| values.iter().any(|v| v == l))
            }
            Requirement::Exists(key) => label(key).is_some(),
            Requirement::NotExists(key) => label(key).is_none(),
        })
    }
}

/// A field selector: `path=value` / `path==value` / `path!=value` terms, ANDed. Any dotted path
/// into the object works (the apiserver supports fewer; `metadata.name` and `metadata.namespace`
/// are what clients use).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    pub fn parse(text: &str) -> Result<FieldSelector, String> {
        let mut terms = Vec::new();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (field, equal, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                (f, true, v)
            } else {
                return Err(format!(
                    "invalid field selector term {term:?}: expected field=value"
                ));
            };
            terms.push((field.trim().to_string(), equal, value.trim().to_string()));
        }
        Ok(FieldSelector(terms))
    }

    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(field, equal, value)| {
            let pointer = format!("/{}", field.replace('.', "/"));
            let actual = match object.pointer(&pointer) {
                Some(Value::String(text)) => text.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (actual == *value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn set_based_label_requirements_are_anded() {
        let selector =
            LabelSelector::parse("app in (a, b),tier notin (db),!legacy").expect("valid");
        let labelled = |labels: Value| json!({"metadata": {"labels": labels}});
        assert!(selector.matches(&labelled(json!({"app": "b", "tier": "web"}))));
        assert!(!selector.matches(&labelled(json!({"app": "b", "tier": "db"}))));
        assert!(!selector.matches(&labelled(json!({"app": "b", "legacy": "1"}))));
        assert!(!selector.matches(&labelled(json!({"app": "c"}))));
    }

    #[test]
    fn malformed_selectors_are_rejected() {
        assert!(LabelSelector::parse("app in (a").is_err());
        assert!(LabelSelector::parse("app within (a)").is_err());
        assert!(FieldSelector::parse("metadata.name").is_err());
    }
}
