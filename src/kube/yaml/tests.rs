use super::*;
use serde_json::{Value, json};

fn value(text: &str) -> Value {
    from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn yaml_1_1_plain_scalars_resolve_as_goyaml_v2_resolves_them() {
    let text = "a: yes\nb: Off\nc: y\nd: N\ne: ON\nf: 0x1F\ng: 0755\nh: 1_000\ni: .5\nj: ~\nk: 1e3\nl: -0b101\nm: 2024-01-02\ns: 'yes'\no: !!str 8080\np: \"on\"\nq: yEs\nr: +12\n";
    assert_eq!(
        value(text),
        json!({"a": true, "b": false, "c": true, "d": false, "e": true, "f": 31, "g": 493,
            "h": 1000, "i": 0.5, "j": null, "k": 1000.0, "l": -5, "m": "2024-01-02",
            "s": "yes", "o": "8080", "p": "on", "q": "yEs", "r": 12})
    );
}

#[test]
fn anchors_aliases_and_merge_keys_expand_as_goyaml_v2_does() {
    let text = "base: &b {x: 1, v: 2}\nother: &o {v: 3, z: 4}\none: {<<: *b, x: 9}\nmany:\n  <<: [*b, *o]\n  w: 0\nlist: [&i item, *i]\n";
    assert_eq!(
        value(text),
        json!({"base": {"x": 1, "v": 2}, "other": {"v": 3, "z": 4}, "one": {"x": 9, "v": 2},
            "many": {"x": 1, "v": 2, "z": 4, "w": 0}, "list": ["item", "item"]})
    );
}

#[test]
fn repeated_key_keeps_the_last_and_only_the_first_document_is_read() {
    assert_eq!(value("a: 1\na: 2\n---\nb: 3\n"), json!({"a": 2}));
    assert_eq!(value("# only a comment\n"), Value::Null);
    assert_eq!(value("---\n"), Value::Null);
    // Keys resolve too, and are written into JSON as their text (sigs.k8s.io/yaml).
    assert_eq!(
        value("y: 1\n1: 2\n~: 3\n"),
        json!({"true": 1, "1": 2, "null": 3})
    );
}

#[test]
fn json_of_any_indentation_bom_crlf_and_tabs_after_colons_read() {
    let json = "{\n\t\"a\": {\n\t\t\"b\": [1, \"two\"]\n\t}\n}\n";
    assert_eq!(value(json), json!({"a": {"b": [1, "two"]}}));
    assert_eq!(
        value("\u{feff}a:\tb\r\nc:  \td # note\r\n"),
        json!({"a": "b", "c": "d"})
    );
    assert_eq!(
        value("a: one\n  two\n\n  three\nb:\n  on a line of its own\n"),
        json!({"a": "one two\nthree", "b": "on a line of its own"})
    );
}

/// What goyaml.v2 reads for a block scalar at the end of a file without a final line break
/// (libyaml-safer would panic on it; see `node::with_final_break`).
#[test]
fn block_scalars_at_the_end_of_input_read_as_goyaml_v2_reads_them() {
    let cases = [
        ("a: |\n  x", json!({"a": "x"})),
        ("a: |+\n  x", json!({"a": "x"})),
        ("a: |-\n  x", json!({"a": "x"})),
        ("- |\n x", json!(["x"])),
        ("\u{feff}a: |\n  x", json!({"a": "x"})),
        ("a: >\n  x\n\n", json!({"a": "x\n"})),
        ("a: |+\n  x\n\n", json!({"a": "x\n\n"})),
        ("a: |\n  x\n  ", json!({"a": "x\n"})),
        ("a: |\n  x\n# c", json!({"a": "x\n"})),
        ("a: |\n  x\nb: y", json!({"a": "x\n", "b": true})),
        ("a: |\n  x\n   ", json!({"a": "x\n "})),
        ("a: |\n  x\n  \t", json!({"a": "x\n\t"})),
        ("a: >\n  x\n   ", json!({"a": "x\n "})),
        ("a: |2\n\n   ", json!({"a": "\n "})),
        ("a: |-\n  x\n   ", json!({"a": "x\n "})),
    ];
    for (text, expected) in cases {
        assert_eq!(value(text), expected, "{text:?}");
    }
    let utf16: Vec<u8> = [0xff, 0xfe]
        .into_iter()
        .chain("a: |\n  x".encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    assert_eq!(
        document(&utf16)
            .unwrap()
            .map(|n| decode::<Value>(&n).unwrap()),
        Some(json!({"a": "x"}))
    );
}

#[test]
fn billion_laughs_and_deep_nesting_are_refused_not_expanded() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..9 {
        let prev = format!("*a{}", i - 1);
        text.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
    }
    let err = from_str::<Value>(&text).unwrap_err();
    assert!(err.message.contains("aliases"), "{err}");
    let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
    let err = from_str::<Value>(&deep).unwrap_err();
    assert!(err.message.contains("deep"), "{err}");
}

#[test]
fn errors_name_line_and_field_never_the_value() {
    #[derive(Debug, serde::Deserialize)]
    struct Doc {
        #[allow(dead_code)]
        items: Vec<Item>,
    }
    #[derive(Debug, serde::Deserialize)]
    struct Item {
        #[allow(dead_code)]
        name: Option<String>,
    }
    let err = from_str::<Doc>("items:\n- name: ok\n- name: 12345\n").unwrap_err();
    assert_eq!((err.line, err.field.as_deref()), (3, Some("items[1].name")));
    assert!(
        err.message.contains("a number") && err.message.contains("quote"),
        "{err}"
    );
    assert!(!err.to_string().contains("12345"), "{err}");
    let err = from_str::<Doc>("items:\n- name: [secret-value\n").unwrap_err();
    assert!(
        err.line >= 2 && !err.to_string().contains("secret"),
        "{err}"
    );
}

/// The fuzzer's kubeconfig seeds, changed in a few places: never a panic, and an error always
/// names a line of the document.
#[test]
fn mutated_kubeconfigs_never_panic_and_errors_always_name_a_line() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/kubeconfig");
    let seeds: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .expect("fuzz seeds")
        .map(|e| std::fs::read(e.expect("seed").path()).expect("read a seed"))
        .collect();
    crate::property::check("kubeconfig mutations", |random| {
        let seed = &seeds[random.below(seeds.len())];
        let input = crate::property::mutate(seed, random);
        crate::fuzzing::kubeconfig(&input);
        if let Err(e) = document(&input).and_then(|d| d.map_or(Ok(Value::Null), |n| decode(&n))) {
            // YAML breaks lines at CR, LF, NEL (C2 85), LS and PS (E2 80 A8/A9) too.
            let breaks = [b'\n', b'\r', 0x85, 0xa8, 0xa9];
            let lines = input.iter().filter(|b| breaks.contains(b)).count() + 1;
            assert!(e.line >= 1 && e.line <= lines + 1, "{e} ({lines} lines)");
        }
    });
}
