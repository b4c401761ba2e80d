//! The run store's variables (`RAG_EVAL_RUNS`, `RAG_EVAL_RUN_GROUP`, `RAG_EVAL_SHARD`) in a
//! build that cannot honour them: without the `runs` feature nothing is recorded and no run
//! group is written or read, and without `postgres` a `postgres://` store cannot be opened.
//! A shard that ignored them would compute every query, write nothing, and leave a gate that
//! recomputes everything and passes; so every trial of every case fails instead, naming the
//! feature and the dependency line that brings it.

/// The variables that ask for the run store, in the order they are named.
const VARIABLES: [&str; 3] = ["RAG_EVAL_RUNS", "RAG_EVAL_RUN_GROUP", "RAG_EVAL_SHARD"];

/// What this build of rag-eval can do with the run store.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Features {
    /// Feature `runs`: a SQLite store, run groups and shards.
    pub runs: bool,
    /// Feature `postgres`: a PostgreSQL store.
    pub postgres: bool,
}

impl Features {
    /// This build's features.
    pub(crate) const fn this() -> Features {
        Features {
            runs: cfg!(feature = "runs"),
            postgres: cfg!(feature = "postgres"),
        }
    }
}

/// Why the run store's variables in this process's environment cannot be honoured by this
/// build, or `None` when they can (or none is set).
pub(crate) fn problem() -> Option<String> {
    unhonoured(Features::this(), |name| std::env::var(name).ok())
}

/// Why the variables `var` gives cannot be honoured by a build with `features`: the variables
/// set, the feature they need, and the dependency line that brings it. An empty variable is
/// unset, and `RAG_EVAL_RUNS=off` asks for nothing.
pub(crate) fn unhonoured(
    features: Features,
    var: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let set: Vec<(&str, String)> = VARIABLES
        .iter()
        .filter_map(|&name| {
            let value = var(name)?.trim().to_owned();
            let off = name == VARIABLES[0] && value.eq_ignore_ascii_case("off");
            (!value.is_empty() && !off).then_some((name, value))
        })
        .collect();
    // A PostgreSQL store as `runs::StoreChoice::parse` reads one (not compiled without `runs`).
    let postgres_url = set.iter().any(|(name, value)| {
        *name == VARIABLES[0]
            && (value.starts_with("postgres://") || value.starts_with("postgresql://"))
    });
    let feature = if postgres_url && !features.postgres {
        "postgres"
    } else if !set.is_empty() && !features.runs {
        "runs"
    } else {
        return None;
    };
    let named: Vec<String> = set
        .iter()
        .filter(|(name, _)| !features.runs || *name == VARIABLES[0])
        .map(|(name, _)| format!("`{name}`"))
        .collect();
    let what = if feature == "postgres" {
        "a PostgreSQL run store"
    } else {
        "the run store and its run groups"
    };
    Some(format!(
        "{} {} set, but this build of rag-eval lacks the `{feature}` feature that {what} needs, \
         so the run would be neither recorded nor shared: add \"{feature}\" to the dependency's \
         features in Cargo.toml's [dev-dependencies], e.g. \
         `rag-eval = {{ path = \"../rag-eval\", features = [\"{feature}\"] }}` (your clone's \
         path), or unset {}",
        named.join(", "),
        if named.len() == 1 { "is" } else { "are" },
        if named.len() == 1 { "it" } else { "them" },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: Features = Features {
        runs: false,
        postgres: false,
    };
    const RUNS: Features = Features {
        runs: true,
        postgres: false,
    };
    const ALL: Features = Features {
        runs: true,
        postgres: true,
    };

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    /// The shard of the sharded walkthrough: a PostgreSQL store, a group and a shard.
    const SHARD: [(&str, &str); 3] = [
        ("RAG_EVAL_RUNS", "postgres://ci@127.0.0.1:5432/rag"),
        ("RAG_EVAL_RUN_GROUP", "github-9876543210"),
        ("RAG_EVAL_SHARD", "1"),
    ];

    #[test]
    fn a_shard_without_the_store_features_is_refused_with_the_line_to_write() {
        let message = unhonoured(NONE, env(&SHARD)).expect("refused");
        assert!(
            message.starts_with(
                "`RAG_EVAL_RUNS`, `RAG_EVAL_RUN_GROUP`, `RAG_EVAL_SHARD` are set, but this \
                 build of rag-eval lacks the `postgres` feature"
            ),
            "{message}"
        );
        assert!(
            message.contains(r#"`rag-eval = { path = "../rag-eval", features = ["postgres"] }`"#),
            "{message}"
        );
        // With `runs` alone, only the URL is the problem.
        let message = unhonoured(RUNS, env(&SHARD)).expect("refused");
        assert!(
            message.starts_with(
                "`RAG_EVAL_RUNS` is set, but this build of rag-eval lacks the `postgres` feature"
            ),
            "{message}"
        );
        assert_eq!(unhonoured(ALL, env(&SHARD)), None);
    }

    #[test]
    fn any_one_variable_without_runs_is_refused_naming_the_runs_feature() {
        for (name, value) in [
            ("RAG_EVAL_RUNS", ".rag-eval/runs.sqlite"),
            ("RAG_EVAL_RUN_GROUP", "nightly"),
            ("RAG_EVAL_SHARD", "2"),
        ] {
            let message = unhonoured(NONE, env(&[(name, value)])).expect(name);
            assert!(
                message.starts_with(&format!(
                    "`{name}` is set, but this build of rag-eval lacks the `runs` feature"
                )),
                "{message}"
            );
            assert!(message.contains(r#"features = ["runs"] }`"#), "{message}");
            assert_eq!(unhonoured(RUNS, env(&[(name, value)])), None, "{name}");
        }
    }

    #[test]
    fn unset_empty_and_off_ask_for_nothing() {
        for features in [NONE, RUNS, ALL] {
            assert_eq!(unhonoured(features, env(&[])), None);
            assert_eq!(
                unhonoured(
                    features,
                    env(&[
                        ("RAG_EVAL_RUNS", "OFF"),
                        ("RAG_EVAL_RUN_GROUP", " "),
                        ("RAG_EVAL_SHARD", "")
                    ])
                ),
                None
            );
        }
    }
}
