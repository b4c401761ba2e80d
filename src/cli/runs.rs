//! `rag-eval runs list|show|delete|export|import`, and the recording of every `eval` and
//! `score` run in the store.

use super::output::Output;
use crate::metrics::RunResult;
use crate::runs::{self, RunRecord, RunStore, StoreChoice};
use anyhow::{Context, Result};
use camino::Utf8PathBuf;
use clap::{Args, Subcommand};

#[derive(Args)]
pub(super) struct RunsArgs {
    /// The store: a SQLite file, a `postgres://` URL (default: `RAG_EVAL_RUNS`, else
    /// `.rag-eval/runs.sqlite`).
    #[arg(long, global = true, value_name = "FILE|URL")]
    store: Option<String>,
    #[command(subcommand)]
    command: RunsCommand,
}

#[derive(Subcommand)]
enum RunsCommand {
    /// List the stored runs, oldest first.
    List {
        /// One JSON object per run (JSONL) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show a run: provenance, configuration, every metric and the means per difficulty.
    Show {
        /// A run id, a unique prefix of one, `latest` or `latest~N`.
        run: String,
        /// The whole run record as JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Delete runs.
    Delete {
        /// Run ids (or unique prefixes, `latest`, `latest~N`).
        #[arg(required = true)]
        runs: Vec<String>,
    },
    /// Write runs as JSON lines (every run when none is named), the format `import` reads.
    Export {
        /// Run ids (or unique prefixes, `latest`, `latest~N`).
        runs: Vec<String>,
        /// Write to this file (atomically) instead of standard output.
        #[arg(short, long)]
        output: Option<Utf8PathBuf>,
    },
    /// Store a LangSmith experiment as a run (its per-query feedback as figures), so that
    /// `compare` and `report` work on it (`LANGSMITH_ENDPOINT`, `LANGSMITH_API_KEY`).
    Pull {
        /// The experiment's name.
        experiment: String,
        #[command(flatten)]
        timeout: super::TimeoutArgs,
        #[command(flatten)]
        max_rows: super::langsmith::MaxRowsArgs,
    },
    /// Add the runs of JSON-lines files (from `export`) to the store; runs already stored are
    /// left as they are.
    Import {
        /// Files to read (`-` for standard input).
        #[arg(required = true)]
        files: Vec<Utf8PathBuf>,
        /// Print `{"imported":N,"present":M}` instead of a sentence.
        #[arg(long)]
        json: bool,
    },
}

fn choose(store: Option<&str>) -> Result<StoreChoice> {
    Ok(match store {
        Some(s) => StoreChoice::parse(Some(s)),
        None => StoreChoice::from_env()?,
    })
}

fn open_choice(choice: &StoreChoice) -> Result<Box<dyn RunStore>> {
    runs::open(choice)?.context(STORE_OFF)
}

const STORE_OFF: &str = "the run store is off (RAG_EVAL_RUNS=off); give --store FILE|URL";

/// The store `choice` names, opened to read only: nothing is created or written, so a store
/// the user may only read can be read. A missing SQLite file is an error naming it.
pub(super) fn open_to_read(choice: &StoreChoice) -> Result<Box<dyn RunStore>> {
    if let Some(path) = missing_file(choice) {
        anyhow::bail!("there is no run store at `{path}`");
    }
    runs::open_read_only(choice)?.context(STORE_OFF)
}

/// The SQLite file `choice` names when it does not exist: reading from it would create it.
fn missing_file(choice: &StoreChoice) -> Option<&camino::Utf8Path> {
    match choice {
        StoreChoice::Sqlite(path) if !path.exists() => Some(path),
        _ => None,
    }
}

/// The store a run id is looked up in: only one that exists (a lookup creates no file).
fn open_for_lookup(store: Option<&str>) -> Result<Box<dyn RunStore>> {
    open_to_read(&choose(store)?)
}

/// The id `text` names in `store`; for `latest` and `latest~N`, a note on stderr says which
/// run that is, as the newest run is not always the one the user thinks of.
fn resolve_noted(store: &dyn RunStore, text: &str) -> crate::Result<crate::runs::RunId> {
    let id = store.resolve(text)?;
    if text.starts_with("latest") {
        note!("`{}` is run {id}", crate::escape::terminal(text));
    }
    Ok(id)
}

/// The run `text` names in `store` ([`resolve_noted`]).
fn load_noted(store: &dyn RunStore, text: &str) -> crate::Result<RunRecord> {
    let id = resolve_noted(store, text)?;
    store.get(&id)?.ok_or_else(|| store.no_such(text))
}

/// The runs `compare` and `report` are given: a JSON file (`eval --json`, `score --json`,
/// `runs export`; a file of several runs brings them all) or else an id in the run store (a
/// unique prefix, `latest`, `latest~N`), labelled, with labels made unique.
pub(super) fn load(texts: &[String], store: Option<&str>) -> Result<Vec<(String, RunResult)>> {
    let mut runs: Vec<(String, RunResult)> = Vec::new();
    let mut opened: Option<Box<dyn RunStore>> = None;
    for text in texts {
        let path = Utf8PathBuf::from(text);
        let found = if path.is_file() {
            crate::report::load_runs(&path)?
        } else {
            let s = match &opened {
                Some(s) => s,
                None => opened.insert(open_for_lookup(store).with_context(|| {
                    format!("`{text}` is no file, and no run store to look it up in")
                })?),
            };
            let record =
                load_noted(s.as_ref(), text).with_context(|| format!("`{text}` is no file"))?;
            vec![(crate::report::record_label(&record), record.into_result())]
        };
        for (label, run) in found {
            crate::report::push_labelled(&mut runs, label, run);
        }
    }
    Ok(runs)
}

pub(super) fn run(a: RunsArgs, out: &mut Output) -> Result<()> {
    // Reading commands create no store: a missing file holds no runs.
    let choice = choose(a.store.as_deref())?;
    if let Some(path) = missing_file(&choice) {
        match &a.command {
            RunsCommand::List { json } => {
                if !json {
                    out.text(&format!("no runs: there is no run store at `{path}`\n"))?;
                }
                return Ok(());
            }
            RunsCommand::Show { run, .. } => {
                anyhow::bail!("there is no run store at `{path}`, so no run `{run}` to show")
            }
            RunsCommand::Delete { .. } => {
                anyhow::bail!("there is no run store at `{path}`: nothing to delete")
            }
            RunsCommand::Export { .. } => {
                anyhow::bail!("there is no run store at `{path}`: nothing to export")
            }
            _ => {}
        }
    }
    let store = match &a.command {
        RunsCommand::List { .. } | RunsCommand::Show { .. } | RunsCommand::Export { .. } => {
            open_to_read(&choice)?
        }
        _ => open_choice(&choice)?,
    };
    match a.command {
        RunsCommand::List { json } => {
            let list = store.list()?;
            if json {
                for s in &list {
                    out.json_line(s)?;
                }
            } else {
                out.text(&runs::list_table(&list))?;
            }
        }
        RunsCommand::Show { run, json } => {
            let record = load_noted(store.as_ref(), &run)?;
            if json {
                out.text(&record.to_json())?;
                out.text("\n")?;
            } else {
                out.text(&runs::describe(&record))?;
            }
        }
        RunsCommand::Delete { runs } => {
            // Every name is resolved before anything is deleted: a typo deletes nothing.
            let ids = runs
                .iter()
                .map(|r| resolve_noted(store.as_ref(), r))
                .collect::<crate::Result<Vec<_>>>()?;
            for id in ids {
                if store.delete(&id)? {
                    out.text(&format!("deleted {id}\n"))?;
                }
            }
        }
        RunsCommand::Export { runs, output } => {
            let records: Vec<RunRecord> = if runs.is_empty() {
                store
                    .list()?
                    .iter()
                    .map(|s| store.load(s.id.as_str()))
                    .collect::<crate::Result<_>>()?
            } else {
                runs.iter()
                    .map(|r| load_noted(store.as_ref(), r))
                    .collect::<crate::Result<_>>()?
            };
            let mut text = String::new();
            for r in &records {
                text.push_str(&r.to_json());
                text.push('\n');
            }
            match output {
                Some(path) => {
                    crate::fs::write_atomic(&path, text.as_bytes())?;
                    note!("exported {} runs to `{path}`", records.len());
                }
                None => out.text(&text)?,
            }
        }
        RunsCommand::Pull {
            experiment,
            timeout,
            max_rows,
        } => {
            let record = super::langsmith::pull_experiment(&experiment, timeout, max_rows)?;
            store.put(&record)?;
            out.text(&format!(
                "stored LangSmith experiment `{experiment}` ({} queries) as run {} in `{}`\n",
                record.result.queries,
                record.id,
                store.location()
            ))?;
        }
        RunsCommand::Import { files, json } => {
            let mut records = Vec::new();
            for f in &files {
                let text = if f == "-" {
                    std::io::read_to_string(std::io::stdin()).context("read standard input")?
                } else {
                    std::fs::read_to_string(f).map_err(|e| crate::Error::io("read", f, e))?
                };
                records.extend(runs::read_jsonl(&text, f)?);
            }
            let mut imported = 0;
            for r in &records {
                imported += usize::from(store.put(r)?);
            }
            let present = records.len() - imported;
            if json {
                out.json_line(&serde_json::json!({"imported": imported, "present": present}))?;
            } else {
                out.text(&format!(
                    "imported {imported} runs into `{}` ({present} already present)\n",
                    store.location()
                ))?;
            }
        }
    }
    Ok(())
}

/// Records `runs` in the store the environment names, unless `skip` (`--no-record`).
///
/// The printed result comes first: it is flushed before the store is opened, and a run whose
/// result could not be printed (a reader that went away, a full disk) is not recorded — the
/// flush's error is returned as any write's would be. A store that cannot be written is a
/// warning on stderr and never changes the exit code.
pub(super) fn record(
    out: &mut Output,
    skip: bool,
    runs: &[RunRecord],
) -> Result<(), super::output::WriteError> {
    if skip || runs.is_empty() {
        return Ok(());
    }
    out.flush()?;
    match runs::record_runs(runs) {
        Ok(Some(location)) => {
            let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
            note!(
                "recorded run{} {} in `{location}`",
                if ids.len() == 1 { "" } else { "s" },
                ids.join(", ")
            );
        }
        Ok(None) => {}
        Err(e) => note!("warning: run not recorded: {e}"),
    }
    Ok(())
}
