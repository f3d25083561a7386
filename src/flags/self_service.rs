//! `--self-service`, `--offer-namespace-selector` and `--max-copies-per-tenant-mirror`,
//! validated into the guardrails of tenant Mirrors ([`SelfService`]).
//!
//! The offer selector takes the equality and existence forms of kubectl's `-l`
//! (`k=v`, `k==v`, `k!=v`, `k`, `!k`, comma-separated, all must hold); set forms (`in`,
//! `notin`) are refused with a message saying so, rather than half understood.

use super::FlagError;
use crate::mirror::SelfService;
use crate::mirror::types::{LabelSelector, LabelSelectorRequirement};

/// Namespaces an admin labelled may offer; tenants cannot label namespaces.
pub const DEFAULT_OFFER_NAMESPACE_SELECTOR: &str = "skiff.dev/may-offer=true";
/// Copies one tenant Mirror makes at most.
pub const DEFAULT_MAX_COPIES_PER_TENANT_MIRROR: u32 = 100;

const SELECTOR_FLAG: &str = "--offer-namespace-selector";
const MAX_FLAG: &str = "--max-copies-per-tenant-mirror";

/// `None` when self-service is off.
pub(super) fn self_service(
    on: bool,
    selector: &str,
    max_copies: u32,
) -> Result<Option<SelfService>, FlagError> {
    if !on {
        return Ok(None);
    }
    if max_copies == 0 {
        return Err(invalid(
            MAX_FLAG,
            format!("{MAX_FLAG} must be at least 1 (got 0); e.g. {MAX_FLAG}=100"),
        ));
    }
    Ok(Some(SelfService {
        offer_selector: label_selector(selector)?,
        max_copies: max_copies as usize,
    }))
}

fn invalid(flag: &'static str, message: String) -> FlagError {
    FlagError::Invalid { flag, message }
}

/// A label selector in kubectl's `-l` equality and existence syntax.
pub(super) fn label_selector(text: &str) -> Result<LabelSelector, FlagError> {
    let mut selector = LabelSelector::default();
    if text.trim().is_empty() {
        return Err(invalid(
            SELECTOR_FLAG,
            format!(
                "{SELECTOR_FLAG} is empty: every namespace could offer; name a label the \
                 admin sets, e.g. {SELECTOR_FLAG}={DEFAULT_OFFER_NAMESPACE_SELECTOR}"
            ),
        ));
    }
    for term in text.split(',').map(str::trim) {
        let requirement = |key: &str, operator: &str, values: Vec<String>| {
            let key = checked(key, text)?;
            Ok::<_, FlagError>(LabelSelectorRequirement {
                key,
                operator: operator.to_owned(),
                values,
            })
        };
        let parsed = if let Some((k, v)) = term.split_once("!=") {
            requirement(k, "NotIn", vec![checked(v, text)?])?
        } else if let Some((k, v)) = term.split_once('=') {
            let v = v.strip_prefix('=').unwrap_or(v);
            requirement(k, "In", vec![checked(v, text)?])?
        } else if let Some(k) = term.strip_prefix('!') {
            requirement(k, "DoesNotExist", Vec::new())?
        } else {
            requirement(term, "Exists", Vec::new())?
        };
        selector.match_expressions.push(parsed);
    }
    Ok(selector)
}

/// A label key or value as written: no spaces or parentheses (the set forms are not taken).
fn checked(part: &str, whole: &str) -> Result<String, FlagError> {
    let part = part.trim();
    let ok = |c: char| c.is_ascii_alphanumeric() || "-_./".contains(c);
    if !part.is_empty() && part.chars().all(ok) {
        return Ok(part.to_owned());
    }
    Err(invalid(
        SELECTOR_FLAG,
        format!(
            "{SELECTOR_FLAG} {whole:?} is not a selector skiff takes: use k=v, k!=v, k or !k, \
             comma-separated (the set forms `in` and `notin` are not supported)"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mirror::namespace_selector::matches;

    fn selects(selector: &str, labels: &[(&str, &str)]) -> bool {
        let s = label_selector(selector).expect("a valid selector");
        matches(&s, |k| {
            labels.iter().find(|(l, _)| *l == k).map(|(_, v)| *v)
        })
    }

    #[test]
    fn equality_and_existence_forms_select_as_kubectl_does() {
        assert!(selects("a=b", &[("a", "b")]));
        assert!(selects("a==b", &[("a", "b")]));
        assert!(!selects("a=b", &[("a", "c")]));
        assert!(selects("a!=b", &[]) && !selects("a!=b", &[("a", "b")]));
        assert!(selects("a, !c", &[("a", "x")]));
        assert!(!selects("a,!c", &[("a", "x"), ("c", "y")]));
        assert!(selects(
            "skiff.dev/may-offer=true",
            &[("skiff.dev/may-offer", "true")]
        ));
    }

    #[test]
    fn set_forms_and_empty_selectors_are_refused_naming_the_flag() {
        for bad in ["a in (b,c)", "", "a=b c", "=b"] {
            let e = label_selector(bad).expect_err(bad).to_string();
            assert!(e.contains(SELECTOR_FLAG), "{e}");
        }
    }

    #[test]
    fn off_unless_asked_and_a_cap_of_zero_is_refused() {
        assert_eq!(self_service(false, "", 0), Ok(None));
        let on = self_service(true, DEFAULT_OFFER_NAMESPACE_SELECTOR, 5).expect("valid");
        assert_eq!(on.map(|s| s.max_copies), Some(5));
        let e = self_service(true, "a", 0).expect_err("cap 0").to_string();
        assert!(e.contains(MAX_FLAG), "{e}");
    }
}
