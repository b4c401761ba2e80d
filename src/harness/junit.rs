//! JUnit XML of a test binary's run, written when `RAG_EVAL_JUNIT` is set: a file per test
//! binary (`$RAG_EVAL_JUNIT/<binary>.xml`, or the path itself when it ends in `.xml`), written
//! atomically once every test has finished. A suite per case, a test case per trial that ran
//! (ignored trials as skipped).

use super::libtest::{Completion, Failed};
use crate::junit::{Case, Outcome, Suite, Suites};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// The variable that asks for the file.
pub(crate) const VAR: &str = "RAG_EVAL_JUNIT";

fn finished() -> &'static Mutex<Vec<Case>> {
    static CASES: OnceLock<Mutex<Vec<Case>>> = OnceLock::new();
    CASES.get_or_init(Default::default)
}

fn case_of(trial: &str) -> String {
    trial.split_once("::").map_or(trial, |(c, _)| c).to_owned()
}

/// `test`, timed, with its outcome kept for the file.
pub(crate) fn recorded(
    name: String,
    test: impl FnOnce() -> Result<Completion, Failed> + Send + 'static,
) -> impl FnOnce() -> Result<Completion, Failed> + Send + 'static {
    move || {
        let started = Instant::now();
        let result = test();
        let outcome = match &result {
            Ok(Completion::Completed) => Outcome::Passed,
            Ok(Completion::Ignored { .. }) => Outcome::Skipped,
            Err(e) => {
                let detail = e.message().to_owned();
                Outcome::Failed {
                    message: detail.lines().next().unwrap_or_default().to_owned(),
                    detail,
                }
            }
        };
        finished()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Case {
                classname: case_of(&name),
                name,
                seconds: started.elapsed().as_secs_f64(),
                outcome,
                output: None,
            });
        result
    }
}

/// Where this binary's file goes: the variable's path when it names an `.xml` file, else a
/// file named after the binary (without cargo's hash suffix) in that folder.
fn destination(value: &str) -> PathBuf {
    let path = PathBuf::from(value);
    if path.extension().is_some_and(|e| e == "xml") {
        return path;
    }
    path.join(format!("{}.xml", binary_name()))
}

fn binary_name() -> String {
    let exe = std::env::current_exe().ok();
    let stem = exe
        .as_ref()
        .and_then(|p| p.file_stem())
        .and_then(|s| s.to_str())
        .unwrap_or("tests");
    match stem.rsplit_once('-') {
        Some((name, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            name.to_owned()
        }
        _ => stem.to_owned(),
    }
}

/// Writes the file when asked for; `ignored` lists the trials marked ignored, reported as
/// skipped when they did not run. Returns the path written.
pub(crate) fn write_if_asked(ignored: &[String]) -> Option<Result<PathBuf, String>> {
    let value = std::env::var(VAR).ok().filter(|v| !v.is_empty())?;
    let path = destination(&value);
    let mut cases = std::mem::take(&mut *finished().lock().unwrap_or_else(|e| e.into_inner()));
    let ran: std::collections::HashSet<String> = cases.iter().map(|c| c.name.clone()).collect();
    for name in ignored {
        if !ran.contains(name) {
            cases.push(Case {
                classname: case_of(name),
                name: name.clone(),
                seconds: 0.0,
                outcome: Outcome::Skipped,
                output: None,
            });
        }
    }
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    let mut suites: Vec<Suite> = Vec::new();
    for case in cases {
        match suites.last_mut() {
            Some(s) if s.name == case.classname => s.cases.push(case),
            _ => suites.push(Suite {
                name: case.classname.clone(),
                cases: vec![case],
            }),
        }
    }
    let xml = Suites {
        name: binary_name(),
        suites,
    }
    .to_xml();
    let write = || -> Result<(), String> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        let utf8 = camino::Utf8Path::from_path(&path)
            .ok_or_else(|| format!("{} is not a UTF-8 path", path.display()))?;
        crate::fs::write_atomic(utf8, xml.as_bytes()).map_err(|e| e.to_string())
    };
    Some(write().map(|()| path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_gets_a_file_per_binary_and_an_xml_path_is_used_as_is() {
        assert_eq!(
            destination("out/report.xml"),
            PathBuf::from("out/report.xml")
        );
        let p = destination("out/junit");
        assert_eq!(p.parent(), Some(std::path::Path::new("out/junit")));
        assert_eq!(p.extension().and_then(|e| e.to_str()), Some("xml"));
        assert_eq!(case_of("bm25::q0001"), "bm25");
        assert_eq!(case_of("plain"), "plain");
    }
}
