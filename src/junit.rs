//! JUnit XML, the format CI dashboards read: `<testsuites>` of `<testsuite>`s of
//! `<testcase>`s, a `<failure>` in each failed case. Both `rag-eval report --format junit` and
//! the test harness (`RAG_EVAL_JUNIT`) write it through [`Suites::to_xml`].

use crate::escape::xml as esc;
use std::fmt::Write as _;

/// How a test case ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// It passed.
    Passed,
    /// It failed: a one-line message and the whole account.
    Failed {
        /// One line for the dashboard's list.
        message: String,
        /// Everything a reader needs to act on the failure.
        detail: String,
    },
    /// It did not run.
    Skipped,
}

/// One test case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The test's name.
    pub name: String,
    /// The group it belongs to (JUnit's class name).
    pub classname: String,
    /// Seconds it took.
    pub seconds: f64,
    /// How it ended.
    pub outcome: Outcome,
    /// What it printed, if anything worth keeping.
    pub output: Option<String>,
}

/// A named group of test cases.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    /// The suite's name.
    pub name: String,
    /// Its cases, in order.
    pub cases: Vec<Case>,
}

/// Every suite of one report or one test binary.
#[derive(Debug, Clone, PartialEq)]
pub struct Suites {
    /// The name of the whole.
    pub name: String,
    /// The suites.
    pub suites: Vec<Suite>,
}

fn tally(cases: &[Case]) -> (usize, usize, usize, f64) {
    let failures = cases
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Failed { .. }))
        .count();
    let skipped = cases
        .iter()
        .filter(|c| c.outcome == Outcome::Skipped)
        .count();
    (
        cases.len(),
        failures,
        skipped,
        cases.iter().map(|c| c.seconds).sum(),
    )
}

impl Suites {
    /// The XML document.
    pub fn to_xml(&self) -> String {
        let all: Vec<Case> = self.suites.iter().flat_map(|s| s.cases.clone()).collect();
        let (tests, failures, skipped, seconds) = tally(&all);
        let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            s,
            "<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{seconds:.3}\">",
            esc(&self.name)
        );
        for suite in &self.suites {
            let (tests, failures, skipped, seconds) = tally(&suite.cases);
            let _ = writeln!(
                s,
                "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{seconds:.3}\">",
                esc(&suite.name)
            );
            for case in &suite.cases {
                let _ = write!(
                    s,
                    "    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3}\"",
                    esc(&case.name),
                    esc(&case.classname),
                    case.seconds
                );
                if case.outcome == Outcome::Passed && case.output.is_none() {
                    s.push_str("/>\n");
                    continue;
                }
                s.push_str(">\n");
                match &case.outcome {
                    Outcome::Passed => {}
                    Outcome::Skipped => s.push_str("      <skipped/>\n"),
                    Outcome::Failed { message, detail } => {
                        let _ = writeln!(
                            s,
                            "      <failure message=\"{}\" type=\"failure\">{}</failure>",
                            esc(message),
                            esc(detail)
                        );
                    }
                }
                if let Some(out) = &case.output {
                    let _ = writeln!(s, "      <system-out>{}</system-out>", esc(out));
                }
                s.push_str("    </testcase>\n");
            }
            s.push_str("  </testsuite>\n");
        }
        s.push_str("</testsuites>\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_escapes() {
        let xml = Suites {
            name: "n".into(),
            suites: vec![Suite {
                name: "s<".into(),
                cases: vec![
                    Case {
                        name: "a\"".into(),
                        classname: "c".into(),
                        seconds: 0.5,
                        outcome: Outcome::Passed,
                        output: None,
                    },
                    Case {
                        name: "b".into(),
                        classname: "c".into(),
                        seconds: 0.25,
                        outcome: Outcome::Failed {
                            message: "m\u{1}".into(),
                            detail: "]]> & <x>".into(),
                        },
                        output: None,
                    },
                    Case {
                        name: "c".into(),
                        classname: "c".into(),
                        seconds: 0.0,
                        outcome: Outcome::Skipped,
                        output: Some("o".into()),
                    },
                ],
            }],
        }
        .to_xml();
        assert!(xml.contains(r#"<testsuites name="n" tests="3" failures="1" errors="0" skipped="1" time="0.750">"#), "{xml}");
        assert!(xml.contains(r#"<testsuite name="s&lt;""#));
        assert!(xml.contains(r#"<testcase name="a&quot;" classname="c" time="0.500"/>"#));
        assert!(xml.contains("message=\"m\u{FFFD}\""));
        assert!(xml.contains("]]&gt; &amp; &lt;x&gt;</failure>"));
        assert!(xml.contains("<skipped/>") && xml.contains("<system-out>o</system-out>"));
    }
}
