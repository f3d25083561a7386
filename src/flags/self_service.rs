//! `--self-service`, `--offer-namespace-selector`, `--max-copies-per-tenant-mirror` and
//! `--self-service-kinds`, validated into the guardrails of tenant Mirrors ([`SelfService`]).
//!
//! Tenants share ConfigMaps unless the admin names more kinds, and never a kind skiff does not
//! copy at all: RBAC-bearing kinds such as RoleBindings are shared only when named here and
//! enabled by `--kinds`, and Secrets only under `--secret-target-names`.
//!
//! The offer selector takes the equality and existence forms of kubectl's `-l`
//! (`k=v`, `k==v`, `k!=v`, `k`, `!k`, comma-separated, all must hold); set forms (`in`,
//! `notin`) are refused with a message saying so, rather than half understood.

use super::FlagError;
use crate::kind::{EnabledBy, Kind, Kinds, SourceKind, TABLE, names};
use crate::kube::api::{LabelSelector, LabelSelectorRequirement};
use std::collections::BTreeSet;

/// The admin's guardrails (`--self-service` on).
#[derive(Debug, Clone, PartialEq)]
pub struct SelfService {
    /// `--offer-namespace-selector`: the namespaces whose Mirrors are offers.
    pub offer_selector: LabelSelector,
    /// `--max-copies-per-tenant-mirror`.
    pub max_copies: usize,
    /// `--self-service-kinds`: the kinds tenants may share.
    pub kinds: BTreeSet<SourceKind>,
    /// `--self-service-projections`: the kinds tenants may publish as another, and as which.
    pub projections: BTreeSet<(SourceKind, SourceKind)>,
    /// `--self-service-orphan`: a tenant's offer may leave its copies when it goes.
    pub orphan: bool,
}

impl SelfService {
    pub fn shares(&self, kind: SourceKind) -> bool {
        self.kinds.contains(&kind)
    }

    /// Whether tenants may copy a `source` into copies of kind `copy`: share it as it is, or
    /// publish it as another kind.
    pub fn shares_as(&self, source: SourceKind, copy: SourceKind) -> bool {
        match source == copy {
            true => self.shares(source),
            false => self.projections.contains(&(source, copy)),
        }
    }

    /// Whether tenants' sources of `kind` are read: shared, or published as another kind.
    pub fn reads(&self, kind: SourceKind) -> bool {
        self.shares(kind) || self.projections.iter().any(|(from, _)| *from == kind)
    }

    /// The kinds tenants may share, as `--self-service-kinds` spells them.
    pub fn kinds_flag(&self) -> String {
        let names: Vec<String> = self.kinds.iter().map(|k| k.row().flag_name()).collect();
        names.join(",")
    }

    /// The projections tenants may make, as `--self-service-projections` spells them (`none`).
    pub fn projections_flag(&self) -> String {
        let names: Vec<String> = (self.projections.iter())
            .filter_map(|(from, to)| Some(from.row().projection_name(from.row().projection(*to)?)))
            .collect();
        match names.is_empty() {
            true => "none".to_owned(),
            false => names.join(","),
        }
    }
}

/// Namespaces an admin labelled may offer; tenants cannot label namespaces.
pub const DEFAULT_OFFER_NAMESPACE_SELECTOR: &str = "skiff.dev/may-offer=true";
/// Copies one tenant Mirror makes at most.
pub const DEFAULT_MAX_COPIES_PER_TENANT_MIRROR: u32 = 100;

const SELECTOR_FLAG: &str = "--offer-namespace-selector";
const MAX_FLAG: &str = "--max-copies-per-tenant-mirror";

/// The only kind tenants share unless the admin names more.
pub const DEFAULT_SELF_SERVICE_KINDS: &str = "configmaps";

const KINDS_FLAG: &str = "--self-service-kinds";
const PROJECTIONS_FLAG: &str = "--self-service-projections";

/// The flags of self-service, as given: `--self-service-kinds`, `--self-service-projections`
/// and `--self-service-orphan`.
pub(super) struct Shared<'a> {
    pub kinds: &'a str,
    pub projections: &'a str,
    pub orphan: bool,
}

/// `None` when self-service is off. `enabled` are the kinds copies are on for, which a shared
/// kind must be.
pub(super) fn self_service(
    on: bool,
    selector: &str,
    max_copies: u32,
    shared: Shared,
    enabled: &Kinds,
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
        kinds: shared_kinds(shared.kinds, enabled)?,
        projections: projections(shared.projections, enabled)?,
        orphan: shared.orphan,
    }))
}

/// `--self-service-projections`: each a projection of the kind table (`secrets-as-configmaps`)
/// whose source kind skiff reads at all.
fn projections(text: &str, kinds: &Kinds) -> Result<BTreeSet<(SourceKind, SourceKind)>, FlagError> {
    let every = || {
        TABLE
            .iter()
            .flat_map(|row| row.published_as.iter().map(move |p| (row, p)))
    };
    let mut allowed = BTreeSet::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let Some((row, p)) = every().find(|(row, p)| row.projection_name(p) == entry) else {
            let names: Vec<String> = every().map(|(row, p)| row.projection_name(p)).collect();
            return Err(invalid(
                PROJECTIONS_FLAG,
                format!(
                    "{PROJECTIONS_FLAG} {entry:?} is not a projection skiff makes; it makes: {}",
                    names.join(", ")
                ),
            ));
        };
        if !kinds.is_enabled(row.id) {
            let why = not_enabled(row, entry);
            let message = format!("{PROJECTIONS_FLAG} names {entry} but {why}");
            return Err(invalid(PROJECTIONS_FLAG, message));
        }
        allowed.insert((row.id, p.to));
    }
    Ok(allowed)
}

/// `--self-service-kinds`: each kind named, and only one skiff copies at all: a kit kind must
/// be in `--kinds`, Secrets need `--secret-target-names` (the only names tenants share).
fn shared_kinds(text: &str, kinds: &Kinds) -> Result<BTreeSet<SourceKind>, FlagError> {
    let mut shared = BTreeSet::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let row = names::lookup(KINDS_FLAG, entry).map_err(kinds_error)?;
        if !kinds.is_enabled(row.id) {
            let why = not_enabled(row, entry);
            return Err(kinds_error(format!("{KINDS_FLAG} names {entry} but {why}")));
        }
        shared.insert(row.id);
    }
    if shared.is_empty() {
        return Err(kinds_error(format!(
            "{KINDS_FLAG} is empty: tenants could share nothing; e.g. \
             {KINDS_FLAG}={DEFAULT_SELF_SERVICE_KINDS}, or drop --self-service"
        )));
    }
    Ok(shared)
}

/// Why tenants may not share `entry`, of the kind `row`, which skiff does not copy.
fn not_enabled(row: &Kind, entry: &str) -> String {
    match row.enabled_by {
        EnabledBy::SecretTargetNames => format!(
            "--secret-target-names is empty: tenants share {}s only under those names; set \
             --secret-target-names (with its RBAC) or drop {entry}",
            row.name
        ),
        EnabledBy::KindsFlag | EnabledBy::Always => format!(
            "--kinds does not enable it: add {} to --kinds (with its RBAC) or drop it here",
            row.flag_name()
        ),
    }
}

fn kinds_error(message: String) -> FlagError {
    invalid(KINDS_FLAG, message)
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

    fn selects(selector: &str, labels: &[(&str, &str)]) -> bool {
        let s = label_selector(selector).expect("a valid selector");
        s.matches(|k| labels.iter().find(|(l, _)| *l == k).map(|(_, v)| *v))
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

    fn on(kinds: &str, enabled: &Kinds, names: &[&str]) -> Result<SelfService, FlagError> {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let selector = DEFAULT_OFFER_NAMESPACE_SELECTOR;
        let enabled = enabled.clone().with_secret_targets(!names.is_empty());
        let shared = Shared {
            kinds,
            projections: "",
            orphan: false,
        };
        self_service(true, selector, 5, shared, &enabled).map(|s| s.expect("on"))
    }

    #[test]
    fn off_unless_asked_and_a_cap_of_zero_is_refused() {
        let none = &Kinds::default();
        let off = Shared {
            kinds: "",
            projections: "",
            orphan: false,
        };
        assert_eq!(self_service(false, "", 0, off, none), Ok(None));
        let on = on(DEFAULT_SELF_SERVICE_KINDS, &Kinds::default(), &[]).expect("valid");
        assert_eq!(on.max_copies, 5);
        let shared = Shared {
            kinds: "configmaps",
            projections: "",
            orphan: false,
        };
        let e = self_service(true, "a", 0, shared, none);
        let e = e.expect_err("cap 0").to_string();
        assert!(e.contains(MAX_FLAG), "{e}");
    }

    #[test]
    fn tenants_share_configmaps_only_unless_the_admin_names_more() {
        let none = Kinds::default();
        let default = on(DEFAULT_SELF_SERVICE_KINDS, &none, &[]).expect("default");
        assert_eq!(default.kinds, BTreeSet::from([SourceKind::ConfigMap]));
        assert!(!default.shares(SourceKind::Secret));
        let both = on("configmaps, secrets", &none, &["app-tls"]).expect("secrets");
        assert!(both.shares(SourceKind::Secret));
        assert_eq!(both.kinds_flag(), "configmaps,secrets");
        let kit = [
            "rolebindings.rbac.authorization.k8s.io".to_string(),
            "limitranges".into(),
        ];
        let kinds = Kinds::parse(&kit, &["view".to_string()]).expect("kinds");
        let shared = on("limitranges", &kinds, &[]).expect("an enabled kit kind");
        assert_eq!(shared.kinds, BTreeSet::from([SourceKind::LimitRange]));
        assert!(!shared.shares(SourceKind::RoleBinding), "never by default");
    }

    #[test]
    fn a_kind_skiff_may_not_copy_is_refused_at_start_naming_the_fix() {
        let none = Kinds::default();
        for (kinds, names, says) in [
            ("secrets", &[][..], "--secret-target-names"),
            ("rolebindings", &["app-tls"][..], "--kinds"),
            ("limitranges", &[][..], "--kinds"),
            ("pods", &[][..], "never copies pods"),
            ("", &[][..], "is empty"),
        ] {
            let e = on(kinds, &none, names).expect_err(kinds).to_string();
            assert!(e.contains(KINDS_FLAG) && e.contains(says), "{kinds}: {e}");
        }
    }
}
