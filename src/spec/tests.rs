use super::*;
use proptest::prelude::*;

fn parse(kind: Kind, text: &str) -> Spec {
    Spec::parse(kind, text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn error(kind: Kind, text: &str) -> String {
    match Spec::parse(kind, text) {
        Ok(s) => panic!("`{text}` parsed as `{s}`"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn unbracketed_nesting_gives_outer_keys_back() {
    let s = parse(
        Kind::Retriever,
        "dense:embedder=openai:model=m,base_url=http://h:1/v1,store=chroma:url=http://h:2,collection=c",
    );
    let expected = Spec::new("dense")
        .with(
            "embedder",
            Spec::new("openai")
                .with("model", "m")
                .with("base_url", "http://h:1/v1"),
        )
        .with(
            "store",
            Spec::new("chroma")
                .with("url", "http://h:2")
                .with("collection", "c"),
        );
    assert_eq!(s, expected);
    assert_eq!(
        s.to_string(),
        "dense:embedder=openai(model=m,base_url=http://h:1/v1),store=chroma(url=http://h:2,collection=c)"
    );
    // Every spelling of the same tree parses to it.
    for text in [
        "dense:embedder=(openai:model=m,base_url=http://h:1/v1),store=(chroma:url=http://h:2,collection=c)",
        "dense:store=chroma(collection=c,url=http://h:2),embedder=openai(base_url=http://h:1/v1,model=m)",
        " dense : embedder = openai ( model = m , base_url = http://h:1/v1 ) , store=chroma:url=http://h:2,collection=c ",
    ] {
        assert_eq!(parse(Kind::Retriever, text), expected, "{text}");
    }
}

#[test]
fn a_key_of_the_outer_component_is_the_outer_s() {
    // `embedder` is a key of both `dense` and `semantic`: unbracketed, the outer wins.
    let s = parse(
        Kind::Retriever,
        "dense:chunker=semantic:buffer=2,embedder=hashing:dim=8",
    );
    assert_eq!(
        s.to_string(),
        "dense:chunker=semantic(buffer=2),embedder=hashing(dim=8)"
    );
    let s = parse(
        Kind::Retriever,
        "dense:chunker=(semantic:buffer=2,embedder=hashing:dim=8)",
    );
    assert_eq!(
        s.to_string(),
        "dense:chunker=semantic(buffer=2,embedder=hashing(dim=8))"
    );
    // The first key after `name:` is always the nested component's own.
    let s = parse(Kind::Retriever, "dense:chunker=semantic:embedder=hashing");
    assert_eq!(s.to_string(), "dense:chunker=semantic(embedder=hashing)");
}

#[test]
fn text_values_keep_urls_and_quote_what_would_split_them() {
    let s = parse(
        Kind::Store,
        r#"chroma:url=https://u@h:8000/api/v2?x=1,collection="a,b (\"c\")""#,
    );
    assert_eq!(s.text("url"), Some("https://u@h:8000/api/v2?x=1"));
    assert_eq!(s.text("collection"), Some(r#"a,b ("c")"#));
    assert_eq!(
        s.to_string(),
        r#"chroma:url=https://u@h:8000/api/v2?x=1,collection="a,b (\"c\")""#
    );
    let s = Spec::new("onnx").with("dir", " models/m ");
    assert_eq!(s.to_string(), r#"onnx:dir=" models/m ""#);
    assert_eq!(parse(Kind::Embedder, &s.to_string()), s);
    // Balanced brackets in unquoted text stay whole.
    assert_eq!(
        parse(Kind::Embedder, "onnx:dir=models/m(v2)").text("dir"),
        Some("models/m(v2)")
    );
}

#[test]
fn syntax_errors_say_where() {
    let e = error(Kind::Retriever, "dense:embedder=(openai:model=m");
    assert!(e.contains("`(` of `openai` is never closed"), "{e}");
    let e = error(Kind::Retriever, "dense:embedder=hashing)");
    assert!(e.contains("unexpected `)` at character 23"), "{e}");
    let e = error(Kind::Embedder, "openai:model=");
    assert!(e.contains("`model` has no value"), "{e}");
    let e = error(Kind::Embedder, "openai:model=\"m");
    assert!(
        e.contains("the quoted value of `model` is never closed"),
        "{e}"
    );
    let e = error(Kind::Retriever, "dense:embedder=");
    assert!(
        e.contains("`embedder`: no embedder named; known: hashing, openai, onnx"),
        "{e}"
    );
    let e = error(Kind::Retriever, "dense:embedder=hashing,embedder=hashing");
    assert!(e.contains("key `embedder` given twice"), "{e}");
    let e = error(Kind::Store, "chroma:url");
    assert!(e.contains("`url` is not key=value"), "{e}");
    assert!(e.starts_with("invalid configuration: store spec `chroma:url`: "));
}

#[test]
fn help_lists_every_component_and_key_of_the_tables() {
    let help = help();
    for kind in Kind::ALL {
        assert!(help.contains(&format!("\n{kind}:\n")), "{kind}");
        for c in kind.components() {
            let line = help
                .lines()
                .skip_while(|l| !l.trim_start().starts_with(&format!("{} ", c.name)))
                .nth(1)
                .unwrap_or_else(|| panic!("{} is not in the help", c.name));
            for k in c.keys {
                assert!(
                    line.contains(&format!("{} (", k.name)),
                    "{}: {line}",
                    c.name
                );
            }
        }
    }
    assert!(help.contains("api_key_env (OPENAI_API_KEY)"));
}

/// Any text value, including the characters that must be quoted.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_./:-]{1,12}",
        "https?://[a-z]{1,5}(:[0-9]{1,4})?(/[a-z0-9]{1,4}){0,2}",
        any::<String>().prop_map(|s| s.chars().take(10).collect()),
        "[ ,()\"\\\\=:a]{0,6}",
    ]
}

/// A spec of `kind` from the tables, with a random subset of its keys set; nested components
/// down to `depth` levels.
fn spec_of(kind: Kind, depth: u32) -> BoxedStrategy<Spec> {
    let components = kind.components();
    (0..components.len())
        .prop_flat_map(move |i| {
            let c = kind.components()[i];
            let keys: Vec<BoxedStrategy<Option<(String, Value)>>> = c
                .keys
                .iter()
                .map(|k| {
                    let value: BoxedStrategy<Value> = match k.nested {
                        Some(nested) if depth > 0 => {
                            spec_of(nested, depth - 1).prop_map(Value::Spec).boxed()
                        }
                        Some(nested) => {
                            let names: Vec<&'static str> =
                                nested.components().iter().map(|c| c.name).collect();
                            proptest::sample::select(names)
                                .prop_map(|n| Value::Spec(Spec::new(n)))
                                .boxed()
                        }
                        None => text().prop_map(Value::Text).boxed(),
                    };
                    proptest::option::of(value.prop_map(move |v| (k.name.to_owned(), v))).boxed()
                })
                .collect();
            keys.prop_map(move |pairs| {
                pairs
                    .into_iter()
                    .flatten()
                    .fold(Spec::new(c.name), |s, (k, v)| s.with(k, v))
            })
        })
        .boxed()
}

/// The other bracketed spelling: nested components as `(name:key=value,...)`.
fn bracketed(spec: &Spec) -> String {
    let mut out = spec.name().to_owned();
    for (i, (k, v)) in spec.params().iter().enumerate() {
        out.push_str(if i == 0 { ":" } else { "," });
        out.push_str(k);
        out.push('=');
        match v {
            Value::Spec(s) => out.push_str(&format!("({})", bracketed(s))),
            Value::Text(_) => {
                // The canonical text of this one pair.
                let one = Spec::new("x").with(k.as_str(), v.clone()).to_string();
                out.push_str(&one[one.find('=').unwrap() + 1..]);
            }
        }
    }
    out
}

proptest! {
    #[test]
    fn print_parse_print_is_a_fixed_point(
        (kind, spec) in proptest::sample::select(Kind::ALL.to_vec())
            .prop_flat_map(|k| spec_of(k, 2).prop_map(move |s| (k, s)))
    ) {
        let printed = spec.to_string();
        let parsed = Spec::parse(kind, &printed)
            .map_err(|e| TestCaseError::fail(format!("{printed}: {e}")))?;
        prop_assert_eq!(&parsed, &spec);
        prop_assert_eq!(parsed.to_string(), printed.clone());
        let other = bracketed(&spec);
        let reparsed = Spec::parse(kind, &other)
            .map_err(|e| TestCaseError::fail(format!("{other}: {e}")))?;
        prop_assert_eq!(reparsed, spec);
    }

    #[test]
    fn unknown_keys_are_named_with_the_valid_ones(
        kind in proptest::sample::select(Kind::ALL.to_vec()),
        i in 0usize..8,
        key in "[a-z]{1,8}",
    ) {
        let components = kind.components();
        let c = components[i % components.len()];
        prop_assume!(c.key(&key).is_none());
        let text = format!("{}:{key}=1", c.name);
        let e = Spec::parse(kind, &text).unwrap_err().to_string();
        prop_assert!(e.contains(&format!("unknown key `{key}` for `{}`", c.name)), "{}", e);
        let listed = if c.keys.is_empty() {
            "none".to_owned()
        } else {
            c.keys.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
        };
        prop_assert!(e.ends_with(&format!("keys: {listed}")), "{}", e);
    }
}
