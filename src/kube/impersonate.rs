//! Impersonation: every request of both clients asks the API server to act as another user,
//! as client-go does for a kubeconfig user with `as`, `as-uid`, `as-groups` and
//! `as-user-extra`, and for kubectl's `--as`, `--as-uid` and `--as-group` flags.
//!
//! Why: a kubeconfig that impersonates usually narrows a powerful credential down to a
//! view-only or team identity. Running with the credential's own identity instead would grant
//! more than its author asked for, so these fields are honoured or refused, never ignored. The
//! credential (token, client certificate, exec plugin) still authenticates the request; the
//! API server then checks the `impersonate` right and runs the request as the impersonated user.

use std::collections::BTreeMap;

/// Who the requests act as: the `Impersonate-*` headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Impersonation {
    pub user: String,
    pub uid: Option<String>,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl Impersonation {
    /// The impersonation a kubeconfig user (named `whose`) asks for, if any. Empty values
    /// count as unset, as in client-go; a uid, group or extra without a user is refused, as
    /// client-go's kubeconfig validation and the API server do. Errors name the field, never
    /// its value.
    pub fn from_fields(
        whose: &str,
        user: Option<String>,
        uid: Option<String>,
        groups: Vec<String>,
        extra: BTreeMap<String, Vec<String>>,
    ) -> Result<Option<Impersonation>, String> {
        let user = user.filter(|u| !u.is_empty());
        let uid = uid.filter(|u| !u.is_empty());
        let Some(user) = user else {
            let set = [
                ("as-uid", uid.is_some()),
                ("as-groups", !groups.is_empty()),
                ("as-user-extra", !extra.is_empty()),
            ];
            return match set.iter().find(|(_, set)| *set) {
                None => Ok(None),
                Some((field, _)) => Err(format!(
                    "{whose} sets `{field}` without `as`: the API server refuses a uid, group or extra without a user to impersonate; set `as` (--as) too, or remove `{field}`"
                )),
            };
        };
        let impersonation = Impersonation {
            user,
            uid,
            groups,
            extra,
        };
        impersonation.check(whose)?;
        Ok(Some(impersonation))
    }

    /// Refuses what an HTTP header cannot carry here: control characters (they would end the
    /// header) and non-ASCII text (client-go sends it as raw bytes; skiff's HTTP library
    /// takes ASCII only). Extra keys need no check: they are percent-encoded.
    fn check(&self, whose: &str) -> Result<(), String> {
        let bad = |v: &String| !v.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b));
        let fields = [
            ("as", bad(&self.user)),
            ("as-uid", self.uid.iter().any(bad)),
            ("as-groups", self.groups.iter().any(bad)),
            ("as-user-extra", self.extra.values().flatten().any(bad)),
        ];
        match fields.into_iter().find(|(_, bad)| *bad) {
            None => Ok(()),
            Some((field, _)) => Err(format!(
                "{whose} has a `{field}` value with a control or non-ASCII character, which skiff cannot send in an HTTP header; use a plain ASCII name"
            )),
        }
    }

    /// The headers, in client-go's way: one `Impersonate-Group` per group and one
    /// `Impersonate-Extra-<escaped key>` per value.
    pub fn headers(&self) -> Vec<(String, &str)> {
        let mut headers = vec![("Impersonate-User".to_owned(), self.user.as_str())];
        if let Some(uid) = &self.uid {
            headers.push(("Impersonate-Uid".to_owned(), uid));
        }
        for group in &self.groups {
            headers.push(("Impersonate-Group".to_owned(), group));
        }
        for (key, values) in &self.extra {
            let name = format!("Impersonate-Extra-{}", header_key_escape(key));
            headers.extend(values.iter().map(|value| (name.clone(), value.as_str())));
        }
        headers
    }
}

/// kubectl's `--as`, `--as-uid` and `--as-group`: each one given replaces the kubeconfig's
/// `as`, `as-uid` or `as-groups` (client-go's config overrides); `as-user-extra` is kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    pub user: Option<String>,
    pub uid: Option<String>,
    pub groups: Vec<String>,
}

impl Overrides {
    /// The impersonation of a loaded config (`loaded`) once these flags override it.
    pub fn apply(&self, loaded: Option<Impersonation>) -> Result<Option<Impersonation>, String> {
        if *self == Overrides::default() {
            return Ok(loaded);
        }
        let base = loaded.unwrap_or_default();
        let groups = match self.groups.is_empty() {
            true => base.groups,
            false => self.groups.clone(),
        };
        Impersonation::from_fields(
            "the --as, --as-uid and --as-group flags, with the kubeconfig's impersonation,",
            self.user.clone().or(Some(base.user)),
            self.uid.clone().or(base.uid),
            groups,
            base.extra,
        )
    }
}

/// client-go's `headerKeyEscape`: every byte that is not an RFC 7230 token character, and
/// `%` itself, becomes `%XX` (upper-case hex), so the server's `url.PathUnescape` gets the key
/// back.
pub fn header_key_escape(key: &str) -> String {
    let mut escaped = String::with_capacity(key.len());
    for byte in key.bytes() {
        let token = byte.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&byte);
        match token {
            true => escaped.push(char::from(byte)),
            false => escaped.push_str(&format!("%{byte:02X}")),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::assert_mentions;

    fn extra(pairs: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.iter().map(|s| (*s).to_owned()).collect()))
            .collect()
    }

    #[test]
    fn extra_keys_are_escaped_as_client_go_escapes_them() {
        for (key, want) in [
            ("scopes", "scopes"),
            ("example.com/team", "example.com%2Fteam"),
            ("100%", "100%25"),
            ("a b:c", "a%20b%3Ac"),
            ("ünï", "%C3%BCn%C3%AF"),
            ("!#$&'*+-.^_`|~09AZaz", "!#$&'*+-.^_`|~09AZaz"),
            (
                "\"(),;<=>?@[\\]{}",
                "%22%28%29%2C%3B%3C%3D%3E%3F%40%5B%5C%5D%7B%7D",
            ),
        ] {
            assert_eq!(header_key_escape(key), want, "{key}");
        }
    }

    #[test]
    fn headers_carry_the_user_uid_each_group_and_each_extra_value() {
        let impersonation = Impersonation::from_fields(
            "user \"u\"",
            Some("jane".into()),
            Some("1234".into()),
            vec!["devs".into(), "system:authenticated".into()],
            extra(&[("example.com/scopes", &["view", "edit"]), ("team", &["a"])]),
        )
        .unwrap()
        .unwrap();
        let headers: Vec<(String, &str)> = impersonation.headers();
        let want = [
            ("Impersonate-User", "jane"),
            ("Impersonate-Uid", "1234"),
            ("Impersonate-Group", "devs"),
            ("Impersonate-Group", "system:authenticated"),
            ("Impersonate-Extra-example.com%2Fscopes", "view"),
            ("Impersonate-Extra-example.com%2Fscopes", "edit"),
            ("Impersonate-Extra-team", "a"),
        ];
        let got: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), *v)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn nothing_set_is_no_impersonation_and_a_user_alone_is_one_header() {
        let none = Impersonation::from_fields("u", Some(String::new()), None, vec![], extra(&[]));
        assert_eq!(none, Ok(None));
        let user = Impersonation::from_fields(
            "u",
            Some("jane".into()),
            Some(String::new()),
            vec![],
            extra(&[]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(user.headers(), [("Impersonate-User".to_owned(), "jane")]);
    }

    #[test]
    fn uid_groups_or_extra_without_a_user_are_refused_naming_the_field_not_the_value() {
        let refused = |uid: Option<&str>, groups: &[&str], pairs: &[(&str, &[&str])]| {
            Impersonation::from_fields(
                "user \"u\"",
                None,
                uid.map(str::to_owned),
                groups.iter().map(|g| (*g).to_owned()).collect(),
                extra(pairs),
            )
            .unwrap_err()
        };
        let uid = refused(Some("secret-uid"), &[], &[]);
        assert_mentions(&uid, &["user \"u\"", "`as-uid`", "without `as`"]);
        let groups = refused(None, &["secret-group"], &[]);
        assert_mentions(&groups, &["`as-groups`", "without `as`"]);
        let extra = refused(None, &[], &[("scopes", &["secret-scope"])]);
        assert_mentions(&extra, &["`as-user-extra`", "without `as`"]);
        for err in [uid, groups, extra] {
            assert!(!err.contains("secret"), "{err}");
        }
    }

    #[test]
    fn flags_replace_the_kubeconfig_fields_they_name_and_keep_the_rest() {
        let loaded = Impersonation {
            user: "jane".into(),
            uid: Some("1".into()),
            groups: vec!["devs".into()],
            extra: extra(&[("scopes", &["view"])]),
        };
        let none = Overrides::default();
        assert_eq!(none.apply(Some(loaded.clone())), Ok(Some(loaded.clone())));
        assert_eq!(none.apply(None), Ok(None));
        let groups = Overrides {
            groups: vec!["ops".into(), "sre".into()],
            ..Overrides::default()
        };
        let applied = groups.apply(Some(loaded.clone())).unwrap().unwrap();
        assert_eq!(
            (applied.user.as_str(), applied.groups),
            ("jane", vec!["ops".into(), "sre".into()])
        );
        assert_eq!(applied.extra, loaded.extra);
        let user = Overrides {
            user: Some("bob".into()),
            ..Overrides::default()
        };
        let applied = user.apply(None).unwrap().unwrap();
        assert_eq!(
            applied,
            Impersonation {
                user: "bob".into(),
                ..Impersonation::default()
            }
        );
        let err = groups.apply(None).unwrap_err();
        assert_mentions(&err, &["--as-group", "without `as`"]);
    }

    #[test]
    fn values_a_header_cannot_carry_are_refused_naming_the_field() {
        let with = |user: &str, groups: &[&str], pairs: &[(&str, &[&str])]| {
            Impersonation::from_fields(
                "user \"u\"",
                Some(user.to_owned()),
                None,
                groups.iter().map(|g| (*g).to_owned()).collect(),
                extra(pairs),
            )
        };
        let err = with("jane\r\nX-Evil: 1", &[], &[]).unwrap_err();
        assert_mentions(&err, &["`as`", "control or non-ASCII"]);
        assert!(!err.contains("Evil"), "{err}");
        let err = with("jane", &["dévs"], &[]).unwrap_err();
        assert_mentions(&err, &["`as-groups`"]);
        let err = with("jane", &[], &[("k", &["a\nb"])]).unwrap_err();
        assert_mentions(&err, &["`as-user-extra`"]);
        assert!(with("jane", &["a\tb"], &[("ü/k", &["v"])]).is_ok());
    }
}
