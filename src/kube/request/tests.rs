use super::*;

fn reply(code: u16, body: &str) -> Reply {
    Reply {
        code,
        retry_after: None,
        body: body.as_bytes().to_vec(),
    }
}

#[test]
fn status_body_becomes_api_error() {
    let body = r#"{"kind":"Status","status":"Failure","reason":"Conflict","message":"the object has been modified","code":409}"#;
    let err = reply_error(&reply(409, body));
    assert_eq!(
        err,
        Error::Api {
            code: 409,
            reason: "Conflict".into(),
            message: "the object has been modified".into(),
            retry_after: None
        }
    );
}

#[test]
fn non_status_body_names_what_came_back() {
    let err = reply_error(&reply(502, "<html>bad gateway</html>"));
    let Error::Api {
        reason, message, ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(reason, "BadGateway");
    assert!(
        message.contains("502") && message.contains("<html>"),
        "{message}"
    );
}

#[test]
fn unauthorized_says_the_token_is_wrong_or_expired() {
    let err = reply_error(&reply(
        401,
        r#"{"kind":"Status","reason":"Unauthorized","message":"Unauthorized"}"#,
    ));
    assert!(err.to_string().contains("wrong or expired"), "{err}");
}

#[test]
fn gone_is_expired() {
    let err = reply_error(&reply(
        410,
        r#"{"reason":"Expired","message":"continue token too old"}"#,
    ));
    assert_eq!(err, Error::Expired("continue token too old".into()));
}

#[test]
fn url_keeps_the_server_path_prefix_and_encodes_the_query() {
    let server = Url::parse("https://rancher.example/k8s/clusters/c1/").unwrap();
    let mut spec = RequestSpec::new(Method::Get, "/api/v1/configmaps".into(), "list");
    spec.query.push(("labelSelector", "app in (a,b)".into()));
    let url = spec.url(&server);
    assert_eq!(
        url.as_str(),
        "https://rancher.example/k8s/clusters/c1/api/v1/configmaps?labelSelector=app+in+%28a%2Cb%29"
    );
}

#[test]
fn bearer_token_and_headers_are_set() {
    let config = Config::new(Url::parse("http://127.0.0.1:1").unwrap());
    let mut spec = RequestSpec::new(Method::Patch, "/api/v1/x".into(), "patch");
    spec.body = Some((b"{}".to_vec().into(), "application/merge-patch+json"));
    let req = spec.build(&config, &Credential::token("t0k".into()));
    assert_eq!(req["Authorization"].as_str(), "Bearer t0k");
    assert_eq!(req["Content-Type"].as_str(), "application/merge-patch+json");
    assert_eq!(req["Accept"].as_str(), "application/json");
    assert!(spec.is_mutating());
    assert!(req.header("Impersonate-User").is_none());
}

#[test]
fn impersonation_headers_ride_beside_the_underlying_credential() {
    let mut config = Config::new(Url::parse("http://127.0.0.1:1").unwrap());
    config.impersonate = Some(crate::kube::impersonate::Impersonation {
        user: "jane".into(),
        groups: vec!["a".into(), "b".into()],
        ..Default::default()
    });
    let spec = RequestSpec::new(Method::Get, "/api/v1/x".into(), "get");
    let req = spec.build(&config, &Credential::token("t0k".into()));
    assert_eq!(req["Authorization"].as_str(), "Bearer t0k");
    assert_eq!(req["Impersonate-User"].as_str(), "jane");
    let groups: Vec<&str> = req["Impersonate-Group"]
        .iter()
        .map(|v| v.as_str())
        .collect();
    assert_eq!(groups, ["a", "b"]);
}
