//! `authentication.k8s.io/v1` TokenReview and `authorization.k8s.io/v1` SubjectAccessReview:
//! how skiff asks the API server who a bearer token belongs to and whether that user may read
//! `/metrics`. Both are create-only and answered in `status`; nothing is stored.

use super::ObjectMeta;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TokenReview {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: TokenReviewSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<TokenReviewStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TokenReviewSpec {
    pub token: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TokenReviewStatus {
    pub authenticated: bool,
    pub user: UserInfo,
}

/// Who a token belongs to, passed on unchanged to the SubjectAccessReview.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UserInfo {
    pub username: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl TokenReview {
    /// A review of `token`.
    pub fn of(token: &str) -> TokenReview {
        TokenReview {
            api_version: "authentication.k8s.io/v1".to_owned(),
            kind: "TokenReview".to_owned(),
            spec: TokenReviewSpec {
                token: token.to_owned(),
            },
            ..TokenReview::default()
        }
    }
}

crate::impl_resource!(
    TokenReview,
    "authentication.k8s.io/v1",
    "TokenReview",
    "tokenreviews",
    namespaced = false
);

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubjectAccessReview {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: SubjectAccessReviewSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<SubjectAccessReviewStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubjectAccessReviewSpec {
    pub user: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
    pub non_resource_attributes: NonResourceAttributes,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NonResourceAttributes {
    pub path: String,
    pub verb: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubjectAccessReviewStatus {
    /// All skiff reads of the answer (its other fields are ignored).
    pub allowed: bool,
}

impl SubjectAccessReview {
    /// May `user` do `verb` on the non-resource URL `path` (e.g. `get` `/metrics`)?
    pub fn non_resource(user: &UserInfo, verb: &str, path: &str) -> SubjectAccessReview {
        SubjectAccessReview {
            api_version: "authorization.k8s.io/v1".to_owned(),
            kind: "SubjectAccessReview".to_owned(),
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                uid: user.uid.clone(),
                groups: user.groups.clone(),
                extra: user.extra.clone(),
                non_resource_attributes: NonResourceAttributes {
                    path: path.to_owned(),
                    verb: verb.to_owned(),
                },
            },
            ..SubjectAccessReview::default()
        }
    }
}

crate::impl_resource!(
    SubjectAccessReview,
    "authorization.k8s.io/v1",
    "SubjectAccessReview",
    "subjectaccessreviews",
    namespaced = false
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::api::Resource;
    use serde_json::json;

    #[test]
    fn reviews_are_addressed_as_cluster_scoped_collections() {
        assert_eq!(
            TokenReview::url_path(Some("ignored"), None),
            "/apis/authentication.k8s.io/v1/tokenreviews"
        );
        assert_eq!(
            SubjectAccessReview::url_path(None, None),
            "/apis/authorization.k8s.io/v1/subjectaccessreviews"
        );
    }

    #[test]
    fn a_subject_access_review_carries_the_reviewed_user_and_the_url() {
        let user = UserInfo {
            username: "system:serviceaccount:monitoring:prometheus".into(),
            uid: "u-1".into(),
            groups: vec!["system:serviceaccounts".into()],
            extra: BTreeMap::new(),
        };
        let review = SubjectAccessReview::non_resource(&user, "get", "/metrics");
        assert_eq!(
            serde_json::to_value(&review).expect("serializes"),
            json!({
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "metadata": {},
                "spec": {
                    "user": "system:serviceaccount:monitoring:prometheus",
                    "uid": "u-1",
                    "groups": ["system:serviceaccounts"],
                    "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
                },
            })
        );
    }

    #[test]
    fn a_token_review_answer_decodes_the_user() {
        let answer = json!({
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "metadata": {"creationTimestamp": null},
            "spec": {"token": "t"},
            "status": {"authenticated": true, "audiences": ["x"],
                       "user": {"username": "admin", "uid": "a", "groups": ["system:masters"],
                                "extra": {"k": ["v"]}}},
        });
        let review: TokenReview = serde_json::from_value(answer).expect("decodes");
        let status = review.status.expect("status");
        assert!(status.authenticated);
        assert_eq!(status.user.username, "admin");
        assert_eq!(status.user.extra["k"], vec!["v".to_owned()]);
    }
}
