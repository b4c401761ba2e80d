//! Prompt templates kept as versioned files: a `version: N` first line, then the template with
//! `{{name}}` placeholders. The generator, every judge and synthetic generation (`synth`) ship
//! theirs and accept a user's file in their place; the version goes into each request's cache
//! key (and, for synthetic datasets, into every row's metadata).

use crate::error::{Error, Result};
use camino::Utf8Path;

/// A versioned prompt template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptTemplate {
    /// The `version:` line's value.
    pub version: String,
    /// The text after the version line.
    pub template: String,
}

impl PromptTemplate {
    /// Parses a prompt file's `text`, allowing only the placeholders in `allowed`; `source`
    /// names the text in messages.
    ///
    /// ```
    /// use rag_eval::llm::PromptTemplate;
    /// let p = PromptTemplate::parse("version: 3\nAnswer {{question}}.\n", "p.md", &["question"])?;
    /// assert_eq!(p.version, "3");
    /// assert_eq!(p.render(&[("question", "why")]), "Answer why.\n");
    /// assert!(PromptTemplate::parse("version: 3\n{{other}}", "p.md", &["question"]).is_err());
    /// # Ok::<(), rag_eval::Error>(())
    /// ```
    pub fn parse(text: &str, source: &str, allowed: &[&str]) -> Result<Self> {
        let (version, rest) = Self::split_version(text).ok_or_else(|| Error::Parse {
            path: source.into(),
            line: 1,
            message: "a prompt file starts with a `version: N` line".into(),
        })?;
        if rest.trim().is_empty() {
            return Err(Error::Parse {
                path: source.into(),
                line: 2,
                message: "the prompt is empty".into(),
            });
        }
        Self::checked(version, rest, source, 2, allowed)
    }

    /// The template `template` of version `version`, allowing only the placeholders in
    /// `allowed`; it starts on line `line` of `source`, so that an error names the line of
    /// the unknown placeholder. What prompt files holding several templates (`rag-eval
    /// generate --prompts`) build each of theirs with.
    pub fn checked(
        version: &str,
        template: &str,
        source: &str,
        line: usize,
        allowed: &[&str],
    ) -> Result<Self> {
        for (i, text) in template.lines().enumerate() {
            if let Some(bad) = placeholders(text).find(|p| !allowed.contains(p)) {
                let known = if allowed.is_empty() {
                    "none".to_owned()
                } else {
                    allowed
                        .iter()
                        .map(|p| format!("{{{{{p}}}}}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                return Err(Error::Parse {
                    path: source.into(),
                    line: line + i,
                    message: format!("unknown placeholder {{{{{bad}}}}} (known: {known})"),
                });
            }
        }
        Ok(PromptTemplate {
            version: version.to_owned(),
            template: template.to_owned(),
        })
    }

    /// The value of a leading `version: N` line (a byte-order mark before it is skipped) and
    /// the text after that line; `None` without one.
    pub(crate) fn split_version(text: &str) -> Option<(&str, &str)> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
        let version = first.trim().strip_prefix("version:")?.trim();
        (!version.is_empty()).then_some((version, rest))
    }

    /// Reads and parses a prompt file (see [`PromptTemplate::parse`]).
    pub fn from_file(path: impl AsRef<Utf8Path>, allowed: &[&str]) -> Result<Self> {
        let path = path.as_ref();
        let text = crate::corpus::read_utf8(path)?;
        Self::parse(&text, path.as_str(), allowed)
    }

    /// A built-in prompt; its text is part of the library, so a fault is a bug.
    pub(crate) fn builtin(text: &str, name: &str, allowed: &[&str]) -> Self {
        Self::parse(text, name, allowed)
            .unwrap_or_else(|e| panic!("built-in prompt {name} does not parse: {e}"))
    }

    /// The template with each `{{name}}` (or `{{ name }}`) replaced by its value, in one pass,
    /// so that a value holding `{{…}}` (a question quoting a template) is left as it is; a
    /// placeholder without a value stays as it is.
    pub fn render<V: AsRef<str>>(&self, values: &[(&str, V)]) -> String {
        let mut out = String::with_capacity(self.template.len());
        let mut rest = self.template.as_str();
        while let Some(at) = rest.find("{{") {
            out.push_str(&rest[..at]);
            let after = &rest[at + 2..];
            match after.split_once("}}") {
                Some((name, tail)) => match values.iter().find(|(n, _)| *n == name.trim()) {
                    Some((_, value)) => {
                        out.push_str(value.as_ref());
                        rest = tail;
                    }
                    None => {
                        out.push_str("{{");
                        rest = after;
                    }
                },
                None => {
                    out.push_str("{{");
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }
}

/// Names of the `{{…}}` placeholders in a line.
fn placeholders(line: &str) -> impl Iterator<Item = &str> {
    line.split("{{").skip(1).filter_map(|s| {
        let (name, _) = s.split_once("}}")?;
        let name = name.trim();
        (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .then_some(name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_prompt_files_name_the_line() {
        let e = |t: &str| {
            PromptTemplate::parse(t, "p.md", &["question", "contexts"])
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            e("Answer."),
            "p.md:1: a prompt file starts with a `version: N` line"
        );
        assert_eq!(e("version: 2\n \n"), "p.md:2: the prompt is empty");
        assert_eq!(
            e("version: 2\nok {{question}}\nuse {{answer}}"),
            "p.md:3: unknown placeholder {{answer}} (known: {{question}}, {{contexts}})"
        );
    }

    #[test]
    fn values_are_not_rendered_again() {
        let p = PromptTemplate::parse("version: 1\n{{a}} and {{b}}", "p", &["a", "b"]).unwrap();
        assert_eq!(p.render(&[("a", "{{b}}"), ("b", "x")]), "{{b}} and x");
        assert_eq!(p.render(&[("b", "x")]), "{{a}} and x");
    }
}
