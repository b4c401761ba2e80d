//! Re-anchoring: moving ground-truth spans back onto their text after the corpus changed.

use super::{SpanProblemKind, TokenDataset};
use crate::corpus::{Corpus, Document};
use crate::span::CharSpan;

/// How a span was placed again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// The recorded text occurs verbatim.
    Exact,
    /// The recorded text occurs with different whitespace (runs of whitespace compared as one
    /// space, leading and trailing whitespace ignored).
    Whitespace,
}

/// A span that moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    /// The example's id.
    pub example_id: String,
    /// Index of the span within the example.
    pub span_index: usize,
    /// Where it was.
    pub from: CharSpan,
    /// Where it is now.
    pub to: CharSpan,
    /// How it was found.
    pub how: Match,
}

/// What [`reanchor`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReanchorReport {
    /// Spans placed again, with where they went.
    pub moved: Vec<Moved>,
    /// Spans that could not be placed (text not found, unknown document, no recorded text),
    /// as messages naming the row.
    pub unplaced: Vec<String>,
}

/// Places every span that disagrees with `corpus` again by searching its recorded text in its
/// document: verbatim first, then ignoring whitespace differences. Of several occurrences the
/// one nearest the old start wins. Spans that agree are left alone; spans that cannot be placed
/// are left as they were and reported.
pub fn reanchor(dataset: &TokenDataset, corpus: &Corpus) -> (TokenDataset, ReanchorReport) {
    let mut out = dataset.clone();
    let mut report = ReanchorReport::default();
    let index_of: std::collections::HashMap<&str, usize> = dataset
        .examples()
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.as_str(), i))
        .collect();
    for p in dataset.check_against(corpus) {
        let i = index_of[p.example_id.as_str()];
        let example = &dataset.examples()[i];
        let old = example.truth[p.span_index].clone();
        let text = example.span_texts[p.span_index].as_deref();
        let doc = match (&p.kind, text) {
            (SpanProblemKind::UnknownDocument(_), _) | (_, None) => {
                report.unplaced.push(p.to_string());
                continue;
            }
            _ => corpus.get(old.doc.as_str()).expect("checked above"),
        };
        let text = text.expect("checked above");
        let found = find_nearest(doc, text, old.start)
            .map(|s| (s, Match::Exact))
            .or_else(|| find_nearest_ws(doc, text, old.start).map(|s| (s, Match::Whitespace)));
        match found {
            Some(((start, end), how)) => {
                let to = CharSpan::new(old.doc.clone(), start, end);
                let e = &mut out.examples[i];
                e.truth[p.span_index] = to.clone();
                e.span_texts[p.span_index] = doc.slice(start, end).map(str::to_owned);
                report.moved.push(Moved {
                    example_id: example.id.clone(),
                    span_index: p.span_index,
                    from: old,
                    to,
                    how,
                });
            }
            None => report.unplaced.push(format!(
                "{p} (the recorded text is no longer in `{}`)",
                old.doc
            )),
        }
    }
    (out, report)
}

/// Char span of the verbatim occurrence of `text` nearest `near`.
fn find_nearest(doc: &Document, text: &str, near: usize) -> Option<(usize, usize)> {
    if text.is_empty() {
        return None;
    }
    let len = text.chars().count();
    doc.content()
        .match_indices(text)
        .filter_map(|(b, _)| doc.byte_to_char(b))
        .min_by_key(|&s| (s.abs_diff(near), s))
        .map(|s| (s, s + len))
}

/// Char span of the occurrence of `text` nearest `near` when whitespace runs compare equal
/// to one space.
fn find_nearest_ws(doc: &Document, text: &str, near: usize) -> Option<(usize, usize)> {
    let (needle, _) = squeeze(text);
    let needle = needle.trim();
    if needle.is_empty() {
        return None;
    }
    let (hay, origin) = squeeze(doc.content());
    let needle_chars = needle.chars().count();
    hay.match_indices(needle)
        .map(|(b, _)| hay[..b].chars().count())
        .map(|c| (origin[c], origin[c + needle_chars - 1] + 1))
        .min_by_key(|&(s, _)| (s.abs_diff(near), s))
}

/// The text with every whitespace run replaced by one space, and for each char of the result
/// the char offset it came from (a run maps to its first char).
fn squeeze(s: &str) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(s.len());
    let mut origin = Vec::with_capacity(s.len());
    let mut in_ws = false;
    for (i, c) in s.chars().enumerate() {
        if c.is_whitespace() {
            if !in_ws {
                out.push(' ');
                origin.push(i);
            }
            in_ws = true;
        } else {
            out.push(c);
            origin.push(i);
            in_ws = false;
        }
    }
    (out, origin)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Document;
    use crate::dataset::{AnyDataset, Example, ToRow};
    use crate::level::TokenLevel;

    fn dataset(spans: &[(&str, usize, usize, &str)]) -> TokenDataset {
        let ex: Vec<Example<TokenLevel>> = spans
            .iter()
            .enumerate()
            .map(|(i, &(doc, s, e, t))| Example {
                id: format!("q{i}"),
                query: "?".into(),
                truth: vec![CharSpan::new(doc, s, e)],
                span_texts: vec![Some(t.into())],
                metadata: Default::default(),
                reference_answers: Vec::new(),
            })
            .collect();
        TokenDataset::new(ex).unwrap()
    }

    #[test]
    fn moves_drifted_spans_exactly_then_ignoring_whitespace() {
        // The corpus gained a prefix and re-wrapped a line.
        let corpus = Corpus::new([Document::new(
            "a.md",
            "New intro. Ünïcode first. The  quick\nbrown fox. The quick brown fox.",
        )])
        .unwrap();
        let d = dataset(&[
            ("a.md", 0, 14, "Ünïcode first."),
            ("a.md", 14, 34, "The quick brown fox."),
            ("a.md", 11, 25, "Ünïcode first."),
            ("a.md", 0, 5, "gone text"),
            ("b.md", 0, 5, "whatever"),
        ]);
        let (fixed, report) = reanchor(&d, &corpus);
        let how: Vec<(&str, Match, usize, usize)> = report
            .moved
            .iter()
            .map(|m| (m.example_id.as_str(), m.how, m.to.start, m.to.end))
            .collect();
        // q1's only verbatim copy is the second sentence (48..68); it is found before any
        // whitespace-insensitive match is tried, though one (26..47) is nearer.
        assert_eq!(
            how,
            [("q0", Match::Exact, 11, 25), ("q1", Match::Exact, 48, 68)]
        );
        assert_eq!(report.unplaced.len(), 2, "{:?}", report.unplaced);
        assert!(
            report.unplaced[0].contains("q3") && report.unplaced[0].contains("no longer in `a.md`")
        );
        assert!(report.unplaced[1].contains("`b.md` is not in the corpus"));
        assert_eq!(fixed.examples()[2], d.examples()[2], "agreeing spans stay");
        let remaining = fixed.check_against(&corpus);
        assert_eq!(remaining.len(), 2, "only the unplaced spans remain");
    }

    #[test]
    fn whitespace_insensitive_match_updates_the_text() {
        let corpus = Corpus::new([Document::new("a.md", "x The  quick\nbrown fox. y")]).unwrap();
        let d = dataset(&[("a.md", 0, 20, "The quick brown fox.")]);
        let (fixed, report) = reanchor(&d, &corpus);
        assert_eq!(report.moved[0].how, Match::Whitespace);
        assert_eq!((report.moved[0].to.start, report.moved[0].to.end), (2, 23));
        assert_eq!(
            fixed.examples()[0].span_texts[0].as_deref(),
            Some("The  quick\nbrown fox.")
        );
        assert!(fixed.check_against(&corpus).is_empty());
        let AnyDataset::Token(_) =
            crate::dataset::parse(&fixed.examples()[0].to_row(), "x").unwrap()
        else {
            panic!()
        };
    }

    #[test]
    fn a_rewrite_keeps_every_field_it_does_not_read() {
        // Row 1 moves; row 2 does not and keeps its very bytes (spacing, key order, `1.50`).
        let text = concat!(
            "{\"id\":\"q1\",\"split\":\"test\",\"inputs\":{\"query\":\"x\",\"lang\":\"en\"},",
            "\"outputs\":{\"reference_answer\":\"Fox.\",\"relevant_spans\":[{\"doc_id\":\"a.md\",",
            "\"start\":0,\"end\":4,\"text\":\"fox.\",\"page\":2}]},\"metadata\":{\"w\":1.50}}\n",
            "{ \"split\": \"dev\", \"id\":\"q2\",\"inputs\":{\"query\":\"y\"},\"outputs\":",
            "{\"relevant_spans\":[{\"doc_id\":\"a.md\",\"start\":0,\"end\":3,\"text\":\"The\"}],",
            "\"reference_answer\":\"The\"},\"metadata\":{\"z\":1.50,\"a\":[]},\"extra\":null}\n",
        );
        let AnyDataset::Token(d) = crate::dataset::parse(text, "d.jsonl").unwrap() else {
            panic!()
        };
        let corpus = Corpus::new([Document::new("a.md", "The quick fox.")]).unwrap();
        let (fixed, report) = reanchor(&d, &corpus);
        assert_eq!(report.moved.len(), 1);
        let written = fixed.to_jsonl();
        let lines: Vec<&str> = written.lines().collect();
        assert_eq!(
            lines[0],
            concat!(
                "{\"id\":\"q1\",\"split\":\"test\",\"inputs\":{\"query\":\"x\",\"lang\":\"en\"},",
                "\"outputs\":{\"reference_answer\":\"Fox.\",\"relevant_spans\":[{\"doc_id\":\"a.md\",",
                "\"start\":10,\"end\":14,\"text\":\"fox.\",\"page\":2}]},\"metadata\":{\"w\":1.50}}"
            )
        );
        assert_eq!(
            lines[1],
            text.lines().nth(1).unwrap(),
            "unchanged row, same bytes"
        );

        let dir = tempfile::tempdir().unwrap();
        let path = camino::Utf8Path::from_path(dir.path())
            .unwrap()
            .join("d.jsonl");
        fixed.write(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
    }
}
