//! The names a `#[rag_eval]` bar may use, checked at compile time against [`REGISTRY`].
//!
//! The attribute macro cannot depend on the library, so it keeps no list of metrics: for every
//! bar it emits a `const` item, spanned at the bar's key, that calls [`bar_problem`] and panics
//! with its message. A misspelt metric is then a compile error at the user's token, worded by
//! the one registry every other part of the crate reads.

use crate::metrics::registry::{Need, REGISTRY};

/// The longest message a check writes; the list of every metric fits with room to spare.
const CAPACITY: usize = 2048;

/// A message built at compile time: [`bar_problem`]'s answer, empty when the bar is fine.
#[derive(Debug, Clone, Copy)]
pub struct BarProblem {
    bytes: [u8; CAPACITY],
    len: usize,
}

impl BarProblem {
    const fn new() -> Self {
        BarProblem {
            bytes: [0; CAPACITY],
            len: 0,
        }
    }

    /// `self` with `text` appended; a text that does not fit is cut at a character boundary.
    const fn push(mut self, text: &str) -> Self {
        let text = text.as_bytes();
        let mut i = 0;
        while i < text.len() && self.len < CAPACITY {
            self.bytes[self.len] = text[i];
            self.len += 1;
            i += 1;
        }
        // Never end inside a character.
        while self.len > 0 && core::str::from_utf8(self.bytes.split_at(self.len).0).is_err() {
            self.len -= 1;
        }
        self
    }

    /// Whether the bar is fine.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The message.
    pub const fn as_str(&self) -> &str {
        match core::str::from_utf8(self.bytes.split_at(self.len).0) {
            Ok(text) => text,
            Err(_) => "",
        }
    }
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The longest name a suggestion is looked for: longer input is no slip of a metric's name.
const LONGEST: usize = 63;

/// The edit distance of `a` and `b` counting a swap of two neighbours as one edit (optimal
/// string alignment), over bytes; `None` when either is longer than [`LONGEST`].
const fn distance(a: &[u8], b: &[u8]) -> Option<usize> {
    if a.len() > LONGEST || b.len() > LONGEST {
        return None;
    }
    // Three rows of the table: two back, one back, this one.
    let mut two = [0usize; LONGEST + 1];
    let mut one = [0usize; LONGEST + 1];
    let mut row = [0usize; LONGEST + 1];
    let mut j = 0;
    while j <= b.len() {
        one[j] = j;
        j += 1;
    }
    let mut i = 1;
    while i <= a.len() {
        row[0] = i;
        let mut j = 1;
        while j <= b.len() {
            let cost = if a[i - 1] == b[j - 1] { 0 } else { 1 };
            let mut best = one[j] + 1;
            if row[j - 1] + 1 < best {
                best = row[j - 1] + 1;
            }
            if one[j - 1] + cost < best {
                best = one[j - 1] + cost;
            }
            if i > 1
                && j > 1
                && a[i - 1] == b[j - 2]
                && a[i - 2] == b[j - 1]
                && two[j - 2] + 1 < best
            {
                best = two[j - 2] + 1;
            }
            row[j] = best;
            j += 1;
        }
        two = one;
        one = row;
        i += 1;
    }
    Some(one[b.len()])
}

/// The registered metric closest to `metric`, when one is close enough to be what was meant:
/// at most a third of the longer name's edits, and at least one; ties go to the earlier.
const fn closest(metric: &str) -> Option<&'static str> {
    let mut best: Option<(usize, &'static str)> = None;
    let mut i = 0;
    while i < REGISTRY.len() {
        best = closer(metric, REGISTRY[i].name, best);
        i += 1;
    }
    match best {
        Some((_, name)) => Some(name),
        None => None,
    }
}

/// `best` or `name`, whichever is closer to `metric` within [`closest`]'s allowance.
const fn closer(
    metric: &str,
    name: &'static str,
    best: Option<(usize, &'static str)>,
) -> Option<(usize, &'static str)> {
    if let Some(d) = distance(metric.as_bytes(), name.as_bytes()) {
        let longest = if metric.len() > name.len() {
            metric.len()
        } else {
            name.len()
        };
        let allowed = if longest / 3 > 1 { longest / 3 } else { 1 };
        let better = match best {
            Some((b, _)) => d < b,
            None => true,
        };
        if d > 0 && d <= allowed && better {
            return Some((d, name));
        }
    }
    best
}

#[cfg(feature = "answers")]
/// What is wrong with a bar `key` (`min_tool_call_accuracy`) on `metric` in a conversation
/// case (`conversations = …`): its figures are the agent figures of
/// [`AGENT_METRICS`](crate::conversation::score::AGENT_METRICS) and the answer metrics its
/// turns get without a judge or an embedder (the registry's metrics that need an answer and
/// neither a judge nor an embedder); anything else is unknown, with the closest name. Empty
/// when the bar can be.
pub const fn conversation_bar_problem(key: &str, metric: &str) -> BarProblem {
    use crate::conversation::score::AGENT_METRICS;
    let m = BarProblem::new();
    let mut best = None;
    let mut i = 0;
    while i < AGENT_METRICS.len() {
        if same(AGENT_METRICS[i], metric) {
            return m;
        }
        best = closer(metric, AGENT_METRICS[i], best);
        i += 1;
    }
    let mut i = 0;
    while i < REGISTRY.len() {
        if turn_answer_metric(&REGISTRY[i]) {
            if same(REGISTRY[i].name, metric) {
                return m;
            }
            best = closer(metric, REGISTRY[i].name, best);
        }
        i += 1;
    }
    let m = m
        .push("unknown conversation metric `")
        .push(metric)
        .push("` in `")
        .push(key);
    if let Some((_, close)) = best {
        return m.push("`, did you mean `").push(close).push("`?");
    }
    let mut m = m.push("`; a conversation case's metrics are ");
    let mut i = 0;
    while i < AGENT_METRICS.len() {
        if i > 0 {
            m = m.push(", ");
        }
        m = m.push(AGENT_METRICS[i]);
        i += 1;
    }
    let mut i = 0;
    while i < REGISTRY.len() {
        if turn_answer_metric(&REGISTRY[i]) {
            m = m.push(", ").push(REGISTRY[i].name);
        }
        i += 1;
    }
    m
}

/// Whether `info` is an answer metric a played conversation's turns get with no judge and no
/// embedder (those of `answer_metrics(false)`, which the conversation scorer measures).
#[cfg(feature = "answers")]
const fn turn_answer_metric(info: &crate::metrics::registry::MetricInfo) -> bool {
    needs(info.needs, Need::Answer)
        && !needs(info.needs, Need::Judge)
        && !needs(info.needs, Need::Embedder)
}

const fn needs(needs: &[Need], need: Need) -> bool {
    let mut i = 0;
    while i < needs.len() {
        if needs[i] as u8 == need as u8 {
            return true;
        }
        i += 1;
    }
    false
}

/// A criteria file of a case, read at compile time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CriteriaFile {
    /// The path as the attribute gives it, relative to the crate root.
    pub path: &'static str,
    /// The file's text.
    pub text: &'static str,
}

impl CriteriaFile {
    /// The metric it reports (the header's `name:`; empty when it has none).
    pub fn name(&self) -> &'static str {
        criteria_name(self.text)
    }
}

/// The `name:` of a criteria file's header (between its first two `---` lines), or `""` when
/// it has none: how a `#[rag_eval(criteria = …)]` case knows at compile time the metric its
/// file reports. [`Criteria::parse`](crate::judge::Criteria::parse) reads the whole file.
pub const fn criteria_name(text: &str) -> &str {
    let bytes = text.as_bytes();
    let mut at = 0;
    let mut line = 0;
    while at < bytes.len() {
        let mut end = at;
        while end < bytes.len() && bytes[end] != b'\n' {
            end += 1;
        }
        let (head, _) = bytes.split_at(end);
        let (_, this) = head.split_at(at);
        let this = trim(this);
        if line == 0 && !same_bytes(this, b"---") {
            return "";
        }
        if line > 0 && same_bytes(this, b"---") {
            return "";
        }
        if this.len() > 5 && same_bytes(this.split_at(5).0, b"name:") {
            return match core::str::from_utf8(trim(this.split_at(5).1)) {
                Ok(name) => name,
                Err(_) => "",
            };
        }
        at = end + 1;
        line += 1;
    }
    ""
}

const fn trim(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if first.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = b {
        if last.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    b
}

const fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// What is wrong with the bar `key` (e.g. `min_span_recall`) on `metric` in a case that
/// answers (`answers`: it returns a `RagAnswer` or a `Rag`, or its shape is not known) and has
/// a `judge` and an `embedder` or not, and whose `criteria` files (path and header name, from
/// [`criteria_name`]) report those metrics. Empty when the bar is fine.
pub const fn bar_problem(
    key: &str,
    metric: &str,
    answers: bool,
    judge: bool,
    embedder: bool,
    criteria: &[(&str, &str)],
) -> BarProblem {
    let m = BarProblem::new();
    let mut c = 0;
    while c < criteria.len() {
        let (path, name) = criteria[c];
        if name.is_empty() {
            return m
                .push("criteria file `")
                .push(path)
                .push("` has no `name:` in a header between `---` lines");
        }
        if same(name, metric) {
            if !answers {
                return m.push("`").push(name).push(
                    "` judges answers, and this case returns retrieved chunks only: make it an \
                     `async fn(&str) -> RagAnswer` or a function returning a `Rag`",
                );
            }
            if !judge {
                return m.push("`").push(name).push(
                    "` is a criteria judge's figure: the case needs `judge = my_judge_client` \
                     (a function returning an `LlmClient`)",
                );
            }
            return m;
        }
        c += 1;
    }
    let mut i = 0;
    let mut found = None;
    while i < REGISTRY.len() {
        if same(REGISTRY[i].name, metric) {
            found = Some(&REGISTRY[i]);
        }
        i += 1;
    }
    let Some(info) = found else {
        let m = m
            .push("unknown metric `")
            .push(metric)
            .push("` in `")
            .push(key);
        if let Some(close) = closest(metric) {
            return m.push("`, did you mean `").push(close).push("`?");
        }
        let mut m = m.push("`; metrics are ");
        let mut i = 0;
        while i < REGISTRY.len() {
            if i > 0 {
                m = m.push(", ");
            }
            m = m.push(REGISTRY[i].name);
            i += 1;
        }
        return m;
    };
    let name = info.name;
    if !cfg!(feature = "answers") && needs(info.needs, Need::Answer) {
        return m.push("`").push(name).push(
            "` scores answers, and rag-eval is built without its `answers` feature: enable it in \
             the dev-dependency, `rag-eval = { version = \"…\", features = [\"answers\"] }`",
        );
    }
    if !answers && needs(info.needs, Need::Answer) {
        return m.push("`").push(name).push(
            "` scores answers, and this case returns retrieved chunks only: make it an \
             `async fn(&str) -> RagAnswer` or a function returning a `Rag` (a retriever and a \
             generator)",
        );
    }
    if !judge && needs(info.needs, Need::Judge) {
        return m.push("`").push(name).push(
            "` is an LLM judge's figure: the case needs `judge = my_judge_client` (a function \
             returning an `LlmClient`)",
        );
    }
    if !embedder && needs(info.needs, Need::Embedder) {
        return m.push("`").push(name).push(
            "` compares embeddings: the case needs `embedder = my_embedder` (a function \
             returning an `Embedder`)",
        );
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(key: &str, metric: &str, answers: bool, judge: bool, embedder: bool) -> String {
        bar_problem(key, metric, answers, judge, embedder, &[])
            .as_str()
            .to_owned()
    }

    #[test]
    fn every_registered_metric_is_a_bar() {
        let built =
            |m: &&crate::metrics::MetricInfo| cfg!(feature = "answers") || !m.needs(Need::Answer);
        for m in REGISTRY.iter().filter(built) {
            assert_eq!(
                problem(&format!("min_{}", m.name), m.name, true, true, true),
                ""
            );
        }
    }

    #[test]
    fn a_slip_finds_its_metric() {
        assert_eq!(
            problem("min_span_recal", "span_recal", false, false, false),
            "unknown metric `span_recal` in `min_span_recal`, did you mean `span_recall`?"
        );
        assert_eq!(
            problem("max_mapp", "mapp", false, false, false),
            "unknown metric `mapp` in `max_mapp`, did you mean `map`?"
        );
        assert_eq!(
            problem("min_fiathfulness", "fiathfulness", false, false, false),
            "unknown metric `fiathfulness` in `min_fiathfulness`, did you mean `faithfulness`?"
        );
    }

    #[test]
    fn an_unrelated_name_lists_the_metrics() {
        let m = problem("max_speed", "speed", true, true, true);
        let names: Vec<&str> = REGISTRY.iter().map(|m| m.name).collect();
        assert_eq!(
            m,
            format!(
                "unknown metric `speed` in `max_speed`; metrics are {}",
                names.join(", ")
            )
        );
        let long = "x".repeat(200);
        assert!(problem("min_x", &long, true, true, true).starts_with("unknown metric `xxx"));
    }

    /// Without the `answers` feature, a bar on any answer metric or judge names the feature.
    #[cfg(not(feature = "answers"))]
    #[test]
    fn without_the_answers_feature_answer_bars_name_it() {
        for m in REGISTRY.iter().filter(|m| m.needs(Need::Answer)) {
            let p = problem(&format!("min_{}", m.name), m.name, true, true, true);
            assert!(p.contains("without its `answers` feature"), "{p}");
        }
    }

    #[cfg(feature = "answers")]
    #[test]
    fn bars_say_what_the_case_lacks() {
        assert!(problem("min_bleu", "bleu", false, true, true).contains("scores answers"));
        assert_eq!(problem("min_bleu", "bleu", true, false, false), "");
        assert!(
            problem("min_faithfulness", "faithfulness", true, false, true)
                .contains("needs `judge = my_judge_client`")
        );
        assert!(problem(
            "min_answer_relevancy",
            "answer_relevancy",
            true,
            true,
            false
        )
        .contains("needs `embedder = my_embedder`"));
        assert!(problem(
            "min_answer_similarity",
            "answer_similarity",
            true,
            true,
            false
        )
        .contains("needs `embedder = my_embedder`"));
        assert_eq!(
            problem(
                "min_answer_similarity",
                "answer_similarity",
                true,
                false,
                true
            ),
            ""
        );
    }

    #[test]
    fn a_criteria_files_name_is_a_bar() {
        let text = "---\nscale: pass/fail\n name:  cites_sources \n---\nCite.\n";
        assert_eq!(criteria_name(text), "cites_sources");
        assert_eq!(criteria_name("name: x\n---\n"), "");
        assert_eq!(criteria_name("---\nscale: 1-5\n---\nname: x\n"), "");
        assert_eq!(criteria_name(""), "");
        let files = [("judges/c.md", criteria_name(text))];
        let p = |answers, judge| {
            bar_problem(
                "min_cites_sources",
                "cites_sources",
                answers,
                judge,
                false,
                &files,
            )
            .as_str()
            .to_owned()
        };
        assert_eq!(p(true, true), "");
        assert!(p(true, false).contains("needs `judge = my_judge_client`"));
        assert!(p(false, true).contains("returns retrieved chunks only"));
        let unnamed = bar_problem("min_mrr", "mrr", true, true, true, &[("judges/c.md", "")]);
        assert_eq!(
            unnamed.as_str(),
            "criteria file `judges/c.md` has no `name:` in a header between `---` lines"
        );
        // Other bars are checked as before.
        assert_eq!(
            bar_problem("min_mrr", "mrr", true, true, true, &files).as_str(),
            ""
        );
    }

    /// A conversation case's bars may name the agent figures and every answer metric the
    /// conversation scorer gives a played turn without a judge or an embedder.
    #[cfg(feature = "answers")]
    #[test]
    fn conversation_bars_take_the_turns_answer_metrics() {
        let p = |metric: &str| {
            conversation_bar_problem(&format!("min_{metric}"), metric)
                .as_str()
                .to_owned()
        };
        let answer: Vec<String> = crate::metrics::answer_metrics(false)
            .iter()
            .map(|m| m.name().to_owned())
            .collect();
        assert!(answer.iter().any(|n| n == "token_f1"), "{answer:?}");
        for name in &answer {
            assert_eq!(p(name), "", "{name}");
        }
        assert_eq!(p("tool_call_f1"), "");
        // Judges and embeddings are not measured in a conversation case.
        for name in ["faithfulness", "answer_similarity", "span_recall"] {
            assert!(p(name).starts_with("unknown conversation metric"), "{name}");
        }
        assert!(
            p("token_f2").contains("did you mean `token_f1`?"),
            "{}",
            p("token_f2")
        );
        let listed = p("zzzzzzzzzzzzzzzzzzzzzzzz");
        assert!(listed.ends_with(&answer.join(", ")), "{listed}");
    }

    #[test]
    fn distances_match_the_naive_definition() {
        assert_eq!(distance(b"", b""), Some(0));
        assert_eq!(distance(b"abc", b"abc"), Some(0));
        assert_eq!(distance(b"abc", b"acb"), Some(1));
        assert_eq!(distance(b"kitten", b"sitting"), Some(3));
        assert_eq!(distance(b"", b"map"), Some(3));
        assert_eq!(distance(&[b'a'; 64], b"a"), None);
    }

    /// A message longer than the buffer is cut whole characters at a time.
    #[test]
    fn long_messages_stay_text() {
        let m = BarProblem::new().push(&"é".repeat(CAPACITY));
        assert_eq!(m.as_str().chars().count(), CAPACITY / 2);
    }
}
