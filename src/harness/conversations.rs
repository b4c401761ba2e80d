//! Conversation cases (`#[rag_eval(conversations = "…")]`): the case's function is a
//! conversational system, and the harness plays each conversation of the file through it
//! ([`play`](crate::conversation::play::play)).
//!
//! Trials are `case::<conversation id>` and `case::summary`. A conversation's trial fails
//! when it cannot be played to its end (a tool call with no recorded result, more steps than
//! `max_steps`), when one of its figures misses a bar of the case, or when one dropped below
//! its golden snapshot by more than the tolerance. The summary holds the means to the bars
//! and writes the golden snapshot (`golden/<case>.snap`, one entry per conversation), as a
//! question case's summary does.

use super::golden::{self, Golden};
use super::libtest::{Completion, Failed, Trial};
use super::private::{CaseSpec, ConversationSystem, InstaHook, SnapshotRequest};
use super::{junit, screen};
use crate::conversation::play::play;
use crate::conversation::score::{run_result, Scorer};
use crate::conversation::{Conversation, Reader};
use crate::metrics::RunResult;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// A conversation case: its spec, its conversations, and what playing them gave (once per
/// process, on the first trial that needs it).
struct ConversationCase {
    spec: CaseSpec,
    system: ConversationSystem,
    conversations: Result<Vec<Conversation>, String>,
    played: OnceLock<Played>,
}

/// The case's run over the conversations that played to their end, and why the others did
/// not, by id.
struct Played {
    outcome: RunResult,
    failed: BTreeMap<String, String>,
}

/// The trials of the conversation case `spec`, whose system is `system`.
pub(super) fn trials(
    spec: CaseSpec,
    system: ConversationSystem,
    hook: &Arc<InstaHook>,
) -> Vec<Trial> {
    let conversations = read(&spec);
    let case = Arc::new(ConversationCase {
        spec,
        system,
        conversations,
        played: OnceLock::new(),
    });
    let name = case.spec.name;
    let mut trials = Vec::new();
    if let (Ok(conversations), true) = (&case.conversations, case.spec.per_query) {
        for c in conversations {
            let (c, id) = (case.clone(), c.id.clone());
            let trial = format!("{name}::{id}");
            trials.push(
                Trial::ignorable_test(
                    trial.clone(),
                    junit::recorded(
                        trial.clone(),
                        screen::recorded(name, trial, true, move || conversation_trial(&c, &id)),
                    ),
                )
                .with_ignored_flag(case.spec.ignore),
            );
        }
    }
    let (c, h) = (case.clone(), hook.clone());
    let trial = format!("{name}::summary");
    trials.push(
        Trial::ignorable_test(
            trial.clone(),
            junit::recorded(
                trial.clone(),
                screen::recorded(name, trial, false, move || {
                    summary_trial(&c, &h).map(|()| Completion::Completed)
                }),
            ),
        )
        .with_ignored_flag(case.spec.ignore),
    );
    trials
}

/// The case's conversations, or what is wrong with the file (its path, line and field).
fn read(spec: &CaseSpec) -> Result<Vec<Conversation>, String> {
    let path = std::path::Path::new(spec.manifest_dir).join(spec.dataset);
    let file = std::fs::File::open(&path).map_err(|e| {
        format!(
            "case `{}`: cannot read `{}`: {e}",
            spec.name,
            path.display()
        )
    })?;
    let name = camino::Utf8PathBuf::from(spec.dataset);
    let conversations = Reader::new(std::io::BufReader::new(file), name)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("case `{}`: {e}", spec.name))?;
    if conversations.is_empty() {
        return Err(format!(
            "case `{}`: `{}` holds no conversation",
            spec.name, spec.dataset
        ));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(c) = conversations.iter().find(|c| !seen.insert(&c.id)) {
        return Err(format!(
            "case `{}`: `{}` line {}: the id `{}` is given twice (each conversation is a test named by its id)",
            spec.name, spec.dataset, c.line, c.id
        ));
    }
    Ok(conversations)
}

impl ConversationCase {
    /// Plays every conversation, once.
    fn played(&self) -> Result<&Played, String> {
        let conversations = self.conversations.as_ref().map_err(Clone::clone)?;
        Ok(self.played.get_or_init(|| {
            let system = self.system;
            // A played conversation is scored as a recorded one: the agent figures and each
            // assistant turn's answer figures (the case takes no corpus and no judge).
            let scorer = Scorer::new(self.spec.k.max(1));
            let (mut per, mut failed) = (Vec::new(), BTreeMap::new());
            for c in conversations {
                let run = async {
                    let played = play(c, system.max_steps, system.next)
                        .await
                        .map_err(|e| e.to_string())?;
                    scorer.score(&played).await.map_err(|e| e.to_string())
                };
                match super::runtime().block_on(run) {
                    Ok(scored) => per.push(scored),
                    Err(e) => {
                        failed.insert(c.id.clone(), e);
                    }
                }
            }
            Played {
                outcome: run_result(per),
                failed,
            }
        }))
    }

    fn golden_path(&self) -> std::path::PathBuf {
        self.spec
            .golden_dir()
            .join(format!("{}.snap", self.spec.name))
    }

    fn tolerance(&self) -> golden::Tolerance<'static> {
        golden::Tolerance {
            figures: self.spec.tolerance,
            judged: self.spec.tolerance,
            criteria: golden::Criteria::Files(&[]),
        }
    }

    /// The golden snapshot, if there is a readable one.
    fn golden(&self) -> Option<Golden> {
        super::snapshot_text(&self.golden_path()).and_then(|t| golden::parse(&t))
    }
}

fn conversation_trial(case: &ConversationCase, id: &str) -> Result<Completion, Failed> {
    let played = case.played()?;
    if let Some(why) = played.failed.get(id) {
        return Err(format!("case `{}`: {why}", case.spec.name).into());
    }
    let Some(q) = played.outcome.per_query.iter().find(|q| q.id == id) else {
        return Ok(Completion::Completed);
    };
    // A bar holds each conversation, not only the mean: the failing conversation is named.
    let mut missed = Vec::new();
    for bar in case.spec.thresholds {
        if let Some(v) = q.metrics.get(&bar.metric) {
            if !bar.passes(v) {
                missed.push(format!(
                    "{} = {v:.4} is {} the bar {:.4} ({})",
                    bar.metric,
                    bar.bound.side_missed(),
                    bar.value,
                    bar.key()
                ));
            }
        }
    }
    if !missed.is_empty() {
        let calls: Vec<String> = q
            .turns
            .iter()
            .flat_map(|t| &t.tool_calls)
            .map(|c| format!("{}({})", c.name, serde_json::Value::Object(c.args.clone())))
            .collect();
        return Err(format!(
            "conversation `{id}` of case `{}` misses its bars:\n  {}\ntool calls made: {}\n",
            case.spec.name,
            missed.join("\n  "),
            if calls.is_empty() {
                "none".to_owned()
            } else {
                calls.join(", ")
            },
        )
        .into());
    }
    let Some(old) = case.golden().and_then(|g| g.per_query.get(id).cloned()) else {
        return Ok(Completion::Completed); // no baseline for it: the summary reports that
    };
    let new = golden::rounded(&q.metrics);
    let comparison = golden::compare_scope(id, &old, &new, case.tolerance());
    let regressed: Vec<&golden::Change> = comparison.regressions().collect();
    if regressed.is_empty() || super::force_pass() {
        return Ok(Completion::Completed);
    }
    screen::dropped(format!("{}::{id}", case.spec.name));
    Err(format!(
        "conversation `{id}` regressed beyond the tolerance {}: {}",
        case.spec.tolerance,
        golden::describe_inline(&regressed)
    )
    .into())
}

fn summary_trial(case: &ConversationCase, hook: &InstaHook) -> Result<(), Failed> {
    let played = case.played()?;
    let outcome = &played.outcome;
    let name = case.spec.name;
    let mut problems: Vec<String> = played
        .failed
        .keys()
        .map(|id| format!("conversation `{id}` could not be played to its end (see its test)"))
        .collect();
    problems.extend(super::missed_bars(case.spec.thresholds, outcome, None));
    let counts: Vec<_> = outcome
        .metrics
        .names()
        .map(|n| outcome.coverage(n))
        .collect();
    let mut means = crate::eval::metric_table_counted(&outcome.metrics, &outcome.std, &counts);
    let publish = |means: &str| {
        let head = format!(
            "\n{name} — conversations, {} played of {}\n",
            outcome.per_query.len(),
            outcome.per_query.len() + played.failed.len()
        );
        let mut reports = super::reports().lock().unwrap_or_else(|e| e.into_inner());
        reports.push(head + means);
    };
    if !played.failed.is_empty() {
        // A baseline of a partial run would pass the next one unseen.
        problems.push(format!(
            "the golden snapshot {} was neither compared nor written",
            case.golden_path().display()
        ));
        publish(&means);
        return Err(format!("case `{name}`:\n{}", problems.join("\n")).into());
    }
    let request = SnapshotRequest {
        dir: case.spec.golden_dir(),
        name: name.to_owned(),
        input_file: std::path::Path::new(case.spec.manifest_dir).join(case.spec.source),
        description: format!("{name} playing the conversations of {}", case.spec.dataset),
        contents: golden::render(outcome),
        tolerance: case.spec.tolerance,
        judge_tolerance: case.spec.tolerance,
    };
    let old = case.golden();
    let assert = hook.assert;
    super::SNAPSHOT_ASSERT.with(|q| q.set(true));
    let snapshot_panicked = std::panic::catch_unwind(|| assert(&request)).is_err();
    super::SNAPSHOT_ASSERT.with(|q| q.set(false));
    match &old {
        None if super::is_ci() => problems.push(format!(
            "no golden snapshot at {}: run the tests locally, review the new snapshot with `cargo insta review` and commit it",
            case.golden_path().display()
        )),
        None if snapshot_panicked => println!(
            "NEW {name}: no baseline yet; this run's figures are in {}.new: accept them with `cargo insta accept` and commit golden/",
            case.golden_path().display()
        ),
        None => println!(
            "NEW {name}: baseline written to {}; commit it",
            case.golden_path().display()
        ),
        Some(old) => {
            let new = Golden::of(outcome);
            let comparison = golden::compare(old, &new, case.tolerance());
            let regressions: Vec<&golden::Change> = comparison.regressions().collect();
            if comparison.configuration.is_none() {
                means = golden::means_table(&old.summary, &new.summary, &comparison.changes);
            }
            if !regressions.is_empty() {
                let account = golden::dropped(
                    case.spec.tolerance,
                    &case.golden_path(),
                    &means,
                    &regressions,
                    false,
                );
                means.clear();
                if super::force_pass() {
                    println!("DROPPED {name}: {account}");
                } else {
                    problems.push(account);
                }
            } else if comparison.improvements().next().is_some() {
                println!(
                    "IMPROVED {name}: accept the new baseline with `cargo insta review` (or `cargo insta accept`)"
                );
            }
            if !comparison.structure.is_empty() {
                let what = comparison.structure.join("; ");
                if super::is_ci() && !super::force_pass() {
                    problems.push(format!(
                        "the golden snapshot no longer fits the case ({what}): accept a new baseline locally and commit it"
                    ));
                } else {
                    println!("CHANGED {name}: {what}; review the new snapshot with `cargo insta review`");
                }
            }
        }
    }
    publish(&means);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("case `{name}`:\n{}", problems.join("\n")).into())
    }
}
