//! The help text made from the component tables, and what the builders share.

use super::components::Kind;
use crate::error::Fault;

/// The builder of `spec`'s component from `builders` (name → function): fails when the
/// component's feature is not compiled in. The parser has already checked that it exists.
pub(crate) fn builder<B: Copy>(
    kind: Kind,
    builders: &[(&str, B)],
    name: &str,
) -> std::result::Result<B, Fault> {
    let info = kind
        .components()
        .into_iter()
        .find(|c| c.name == name)
        .ok_or_else(|| Fault::new(format!("unknown {kind} `{name}`")))?;
    if !info.enabled {
        return Err(Fault::new(info.missing_feature()));
    }
    builders
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, b)| *b)
        .ok_or_else(|| Fault::new(format!("the {kind} `{name}` has no builder")))
}

/// ` (did you mean `x`?)` when a candidate is close, else nothing.
pub(crate) fn did_you_mean(given: &str, candidates: &[&str]) -> String {
    candidates
        .iter()
        .map(|c| (strsim::levenshtein(given, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min()
        .map(|(_, c)| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}

/// Every component of every kind with its keys, for `--help`: generated from the tables, so
/// it lists exactly what the parser accepts.
pub fn help() -> String {
    let mut out = String::from(
        "Component specs: NAME[:KEY=VALUE,...]. A value that is itself a component nests as \
         NAME(KEY=VALUE,...), as (NAME:KEY=VALUE,...), or unbracketed: then a key the outer \
         component does not have belongs to the nested one. Quote values holding `,` or `)` \
         with \"...\". API keys are read from the environment variable `api_key_env` names.\n",
    );
    for kind in Kind::ALL {
        out.push_str(&help_for(kind));
    }
    out
}

/// The components of one kind with their keys, one line each.
pub fn help_for(kind: Kind) -> String {
    let components = kind.components();
    let width = components.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut out = format!("\n{kind}:\n");
    for c in components {
        let keys: Vec<String> = c
            .keys
            .iter()
            .map(|k| format!("{} ({})", k.name, k.about))
            .collect();
        let keys = if keys.is_empty() {
            "no keys".to_owned()
        } else {
            keys.join(", ")
        };
        let feature = match c.feature {
            Some(f) if !c.enabled => format!(" [feature `{f}`, not built in]"),
            Some(f) => format!(" [feature `{f}`]"),
            None => String::new(),
        };
        out.push_str(&format!(
            "  {:width$}  {}{feature}\n  {:width$}    keys: {keys}\n",
            c.name, c.about, ""
        ));
    }
    out
}
