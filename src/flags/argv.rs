//! argv normalisation: the `--flag=value` and boolean forms kubebuilder users type, made argh-ready.
//!
//! argh takes `--flag value` only and its switches take no value. Operators are run with
//! `--flag=value` and `--leader-elect=false` in manifests, so argv is rewritten first:
//! `--flag=value` → `--flag value`; the switch `--leader-elect` is kept, dropped or rejected
//! by its value; `--leader-elect-release-on-cancel` (an option whose default is true) gets an
//! explicit `true` when it stands alone. Everything after `--` is left untouched.

/// Boolean flags that argh declares as a switch (present = true).
const SWITCHES: &[&str] = &["--leader-elect"];
/// Boolean flags that argh declares as an option taking `true`/`false`.
const BOOL_OPTIONS: &[&str] = &[
    "--leader-elect-release-on-cancel",
    "--leader-elect-pod-deletion-cost",
    "--metrics-secure",
    "--require-write-policy",
];

/// Go's `strconv.ParseBool`, which `flag` uses for `--x=value`.
pub fn parse_bool(text: &str) -> Result<bool, String> {
    match text {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(format!("invalid boolean {text:?} (use true or false)")),
    }
}

/// Rewrites argv (without the program name) into the form argh parses.
pub fn normalize(args: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::with_capacity(args.len() + 2);
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            out.push(arg.clone());
            out.extend(rest.by_ref().cloned());
            break;
        }
        let (name, inline_value) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        };
        let is_switch = SWITCHES.contains(&name);
        if !is_switch && !BOOL_OPTIONS.contains(&name) {
            out.push(name.to_owned());
            out.extend(inline_value);
            continue;
        }
        let value = match inline_value {
            Some(text) => parse_bool(&text).map_err(|e| format!("{name}: {e}"))?,
            None => take_bool_literal(&mut rest).unwrap_or(true),
        };
        if !is_switch {
            out.extend([name.to_owned(), value.to_string()]);
        } else if value {
            out.push(name.to_owned());
        }
    }
    Ok(out)
}

/// `--x true` / `--x false`: consumes the next argument only when it is a boolean literal.
fn take_bool_literal(rest: &mut std::slice::Iter<'_, String>) -> Option<bool> {
    let value = match rest.as_slice().first()?.as_str() {
        "true" => true,
        "false" => false,
        _ => return None,
    };
    rest.next();
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(args: &[&str]) -> Result<Vec<String>, String> {
        normalize(&args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>())
    }

    fn ok(args: &[&str]) -> Vec<String> {
        norm(args).expect("normalises")
    }

    #[test]
    fn splits_flag_equals_value_at_the_first_equals_sign() {
        assert_eq!(
            ok(&["--context=a=b", "--kube-api-qps=50", "--log-level", "debug"]),
            [
                "--context",
                "a=b",
                "--kube-api-qps",
                "50",
                "--log-level",
                "debug"
            ]
        );
        assert_eq!(ok(&["--context="]), ["--context", ""]);
    }

    #[test]
    fn values_containing_equals_are_not_split() {
        assert_eq!(ok(&["--kubeconfig", "/k=v"]), ["--kubeconfig", "/k=v"]);
    }

    #[test]
    fn leader_elect_switch_accepts_every_boolean_form() {
        assert_eq!(ok(&["--leader-elect"]), ["--leader-elect"]);
        assert_eq!(ok(&["--leader-elect=true"]), ["--leader-elect"]);
        assert_eq!(ok(&["--leader-elect=false"]), Vec::<String>::new());
        assert_eq!(ok(&["--leader-elect", "false"]), Vec::<String>::new());
        assert_eq!(
            ok(&["--leader-elect", "--context", "x"]),
            ["--leader-elect", "--context", "x"]
        );
    }

    #[test]
    fn release_on_cancel_gets_an_explicit_value() {
        let flag = "--leader-elect-release-on-cancel";
        assert_eq!(ok(&[flag]), [flag, "true"]);
        assert_eq!(
            ok(&["--leader-elect-release-on-cancel=false"]),
            [flag, "false"]
        );
        assert_eq!(ok(&["--leader-elect-release-on-cancel=0"]), [flag, "false"]);
        assert_eq!(ok(&[flag, "false"]), [flag, "false"]);
    }

    #[test]
    fn a_bad_boolean_names_the_flag() {
        let err = norm(&["--leader-elect=maybe"]).unwrap_err();
        assert!(
            err.starts_with("--leader-elect: invalid boolean \"maybe\""),
            "{err}"
        );
    }

    #[test]
    fn everything_after_double_dash_is_untouched() {
        assert_eq!(
            ok(&["--", "--leader-elect=false"]),
            ["--", "--leader-elect=false"]
        );
    }
}
