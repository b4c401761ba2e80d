//! Worked examples shown to the model.

use super::Difficulty;
use crate::error::{Error, Result};
use camino::Utf8Path;
use serde::{Deserialize, Serialize};

/// A worked example shown to the model (few-shot prompting).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FewShot {
    /// The question.
    pub question: String,
    /// The passage that answers it, verbatim.
    pub excerpt: String,
    /// Its difficulty.
    pub difficulty: Difficulty,
    /// A short answer to the question, as the model is asked to write one with each question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

impl FewShot {
    /// Reads few-shot examples from JSONL, one `{"question","excerpt","difficulty"}` object per
    /// line, optionally with an `"answer"` (blank lines skipped); errors name the file and line.
    pub fn load_jsonl(path: impl AsRef<Utf8Path>) -> Result<Vec<FewShot>> {
        let path = path.as_ref();
        let text = crate::corpus::read_utf8(path)?;
        FewShot::parse_jsonl(&text, path.as_str())
    }

    /// Parses few-shot JSONL; `source` names the input in messages.
    pub fn parse_jsonl(text: &str, source: &str) -> Result<Vec<FewShot>> {
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let perr = |message: String| Error::Parse {
                path: source.into(),
                line: i + 1,
                message,
            };
            let shot: FewShot = serde_json::from_str(line).map_err(|e| perr(e.to_string()))?;
            if shot.question.trim().is_empty() || shot.excerpt.trim().is_empty() {
                return Err(perr("`question` and `excerpt` must not be empty".into()));
            }
            out.push(shot);
        }
        Ok(out)
    }

    /// The examples the built-in prompts show when the configuration has none: one per
    /// difficulty, on a made-up text, so that they teach the form without leaking facts.
    pub fn builtin() -> Vec<FewShot> {
        let shot = |q: &str, e: &str, d, a: &str| FewShot {
            question: q.into(),
            excerpt: e.into(),
            difficulty: d,
            answer: Some(a.into()),
        };
        vec![
            shot(
                "How long does the Meridian ferry take to cross the bay?",
                "The crossing takes 40 minutes in calm weather.",
                Difficulty::Factual,
                "40 minutes in calm weather.",
            ),
            shot(
                "Which two ferry routes share the north pier, and how do their timetables differ?",
                "Both the Meridian and the Harbour Loop leave from the north pier; the Meridian runs hourly, the Harbour Loop only at weekends.",
                Difficulty::Analytical,
                "The Meridian and the Harbour Loop; the Meridian runs hourly, the Harbour Loop only at weekends.",
            ),
            shot(
                "Could a passenger with a bicycle board the last evening sailing?",
                "Bicycles are carried on every sailing before 18:00. The last sailing leaves at 21:30.",
                Difficulty::Inferential,
                "No: bicycles are carried only before 18:00, and the last sailing leaves at 21:30.",
            ),
            shot(
                "What is the duration of the trip across the water on the Meridian boat?",
                "The crossing takes 40 minutes in calm weather.",
                Difficulty::Paraphrased,
                "40 minutes, in calm weather.",
            ),
        ]
    }
}

/// The few-shot block of a prompt.
pub(crate) fn render_examples(shots: &[FewShot], chunk_level: bool) -> String {
    let mut out = String::new();
    for (i, s) in shots.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let label = if chunk_level {
            "Passage of the cited chunk"
        } else {
            "Excerpt"
        };
        out.push_str(&format!(
            "Question: {}\n{label}: {}\n",
            s.question,
            serde_json::to_string(&s.excerpt).unwrap_or_default(),
        ));
        if let Some(a) = &s.answer {
            out.push_str(&format!("Answer: {a}\n"));
        }
        out.push_str(&format!("Difficulty: {}\n", s.difficulty));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_shot_jsonl_reads_and_reports_line() {
        let text = "{\"question\":\"q?\",\"excerpt\":\"e\",\"difficulty\":\"factual\"}\n\n{\"question\":\"q\",\"excerpt\":\"e\",\"difficulty\":\"hard\"}\n";
        let e = FewShot::parse_jsonl(text, "f.jsonl")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("f.jsonl:3: unknown variant `hard`"), "{e}");
        let ok = FewShot::parse_jsonl(text.lines().next().unwrap(), "f").unwrap();
        assert_eq!(ok[0].difficulty, Difficulty::Factual);
        let e = FewShot::parse_jsonl(
            "{\"question\":\" \",\"excerpt\":\"e\",\"difficulty\":\"factual\"}",
            "f",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("must not be empty"), "{e}");
        let with = FewShot::parse_jsonl(
            "{\"question\":\"q?\",\"excerpt\":\"e\",\"difficulty\":\"factual\",\"answer\":\"a.\"}",
            "f",
        )
        .unwrap();
        assert_eq!(with[0].answer.as_deref(), Some("a."));
        assert_eq!(
            render_examples(&with, false),
            "Question: q?\nExcerpt: \"e\"\nAnswer: a.\nDifficulty: factual\n"
        );
    }
}
