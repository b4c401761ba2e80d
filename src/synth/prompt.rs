//! The prompts of a generation run: built-in templates and prompt files that override them.

use crate::error::{Error, Result};
use crate::llm::PromptTemplate;
use camino::Utf8Path;

/// The prompts of a generation run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompts {
    /// Token-level generation: questions with verbatim excerpts.
    pub token: PromptTemplate,
    /// Chunk-level generation: questions citing chunk ids.
    pub chunk: PromptTemplate,
    /// The check whether a question can be answered without the document.
    pub answerable: PromptTemplate,
}

const TOKEN_PROMPT: &str = include_str!("prompts/token.md");
const CHUNK_PROMPT: &str = include_str!("prompts/chunk.md");
const ANSWERABLE_PROMPT: &str = include_str!("prompts/answerable.md");

/// Placeholders each prompt may use.
const TOKEN_PLACEHOLDERS: &[&str] = &["questions", "min_chars", "max_chars", "examples"];
const CHUNK_PLACEHOLDERS: &[&str] = &["questions", "examples"];
const ANSWERABLE_PLACEHOLDERS: &[&str] = &[];

impl Default for Prompts {
    fn default() -> Self {
        Prompts::builtin()
    }
}

impl Prompts {
    /// The prompts shipped with the library.
    pub fn builtin() -> Self {
        Prompts {
            token: PromptTemplate::builtin(TOKEN_PROMPT, "token.md", TOKEN_PLACEHOLDERS),
            chunk: PromptTemplate::builtin(CHUNK_PROMPT, "chunk.md", CHUNK_PLACEHOLDERS),
            answerable: PromptTemplate::builtin(
                ANSWERABLE_PROMPT,
                "answerable.md",
                ANSWERABLE_PLACEHOLDERS,
            ),
        }
    }

    /// The built-in prompts with the sections of a user file in their place (see the module
    /// documentation for the format).
    pub fn from_file(path: impl AsRef<Utf8Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = crate::corpus::read_utf8(path)?;
        Prompts::builtin().overridden_by(&text, path.as_str())
    }

    /// These prompts with the sections of a prompt file's text in their place; `source` names
    /// the text in messages.
    pub fn overridden_by(mut self, text: &str, source: &str) -> Result<Self> {
        let err = |line: usize, message: String| Error::Parse {
            path: source.into(),
            line,
            message,
        };
        let (version, body) = PromptTemplate::split_version(text).ok_or_else(|| {
            err(
                1,
                "a prompt file starts with a `version: N` line".to_owned(),
            )
        })?;
        // Line numbers in messages count from the line after the version line.
        let mut sections: Vec<(String, usize, String)> = Vec::new();
        for (i, line) in body.lines().enumerate() {
            let t = line.trim();
            if let Some(name) = t
                .strip_prefix("===")
                .and_then(|r| r.strip_suffix("==="))
                .map(str::trim)
            {
                if !["token", "chunk", "answerable"].contains(&name) {
                    return Err(err(
                        i + 2,
                        format!("unknown section `{name}` (expected token, chunk or answerable)"),
                    ));
                }
                if sections.iter().any(|(n, _, _)| n == name) {
                    return Err(err(i + 2, format!("section `{name}` appears twice")));
                }
                sections.push((name.to_owned(), i + 2, String::new()));
            } else if let Some((_, _, text)) = sections.last_mut() {
                text.push_str(line);
                text.push('\n');
            } else if !t.is_empty() {
                return Err(err(
                    i + 2,
                    "text before the first `=== token ===`, `=== chunk ===` or `=== answerable ===` line"
                        .into(),
                ));
            }
        }
        if sections.is_empty() {
            return Err(err(
                1,
                "no `=== token ===`, `=== chunk ===` or `=== answerable ===` section".into(),
            ));
        }
        for (name, line, template) in sections {
            let (slot, allowed) = match name.as_str() {
                "token" => (&mut self.token, TOKEN_PLACEHOLDERS),
                "chunk" => (&mut self.chunk, CHUNK_PLACEHOLDERS),
                _ => (&mut self.answerable, ANSWERABLE_PLACEHOLDERS),
            };
            if template.trim().is_empty() {
                return Err(err(line, format!("section `{name}` is empty")));
            }
            // The template starts on the line after its `=== name ===` line.
            let mut prompt =
                PromptTemplate::checked(version, &template, source, line + 1, allowed)?;
            prompt.template = prompt.template.trim().to_owned() + "\n";
            *slot = prompt;
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::Difficulty;
    #[test]
    fn builtin_prompts_have_versions_and_only_known_placeholders() {
        let p = Prompts::builtin();
        // `builtin` checked their placeholders.
        for (prompt, version) in [(&p.token, "2"), (&p.chunk, "2"), (&p.answerable, "1")] {
            assert_eq!(prompt.version, version);
            assert!(!prompt.template.starts_with("version"));
        }
        assert!(p.token.template.contains("{{examples}}"));
        for d in Difficulty::ALL {
            assert!(p.token.template.contains(d.as_str()), "{d}");
            assert!(p.chunk.template.contains(d.as_str()), "{d}");
        }
    }

    #[test]
    fn prompt_files_override_named_sections_only() {
        let text = "version: 7\n=== token ===\nAsk {{ questions }} things.\n\n=== answerable ===\nAnswer it.\n";
        let p = Prompts::builtin().overridden_by(text, "p.md").unwrap();
        assert_eq!(p.token.version, "7");
        assert_eq!(p.token.template, "Ask {{ questions }} things.\n");
        // A placeholder spelled with spaces is filled too, and a value is not filled again.
        assert_eq!(p.token.render(&[("questions", "4")]), "Ask 4 things.\n");
        assert_eq!(
            p.token.render(&[("questions", "{{questions}}")]),
            "Ask {{questions}} things.\n"
        );
        assert_eq!(p.answerable.template, "Answer it.\n");
        assert_eq!(p.chunk, Prompts::builtin().chunk);
    }

    #[test]
    fn bad_prompt_files_are_errors_naming_the_line() {
        let e = |t: &str| {
            Prompts::builtin()
                .overridden_by(t, "p.md")
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            e("=== token ===\nx"),
            "p.md:1: a prompt file starts with a `version: N` line"
        );
        assert_eq!(
            e("version: 2\nhello\n=== token ===\nx"),
            "p.md:2: text before the first `=== token ===`, `=== chunk ===` or `=== answerable ===` line"
        );
        assert_eq!(
            e("version: 2\n=== tokens ===\nx"),
            "p.md:2: unknown section `tokens` (expected token, chunk or answerable)"
        );
        assert_eq!(
            e("version: 2\n=== chunk ===\nFine.\nUse {{min_chars}}."),
            "p.md:4: unknown placeholder {{min_chars}} (known: {{questions}}, {{examples}})"
        );
        assert_eq!(
            e("version: 2\n=== answerable ===\nUse {{questions}}."),
            "p.md:3: unknown placeholder {{questions}} (known: none)"
        );
        assert_eq!(
            e("version: 2\n=== chunk ===\n\n=== token ===\nx"),
            "p.md:2: section `chunk` is empty"
        );
        assert_eq!(
            e("version: 2\n\n"),
            "p.md:1: no `=== token ===`, `=== chunk ===` or `=== answerable ===` section"
        );
        assert!(e("version: 2\n=== chunk ===\na\n=== chunk ===\nb")
            .contains("p.md:4: section `chunk` appears twice"));
    }
}
