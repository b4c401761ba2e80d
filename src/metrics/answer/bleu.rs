//! BLEU as sacrebleu 2.x computes it with its defaults: the 13a tokenizer, no lowercasing,
//! n-grams up to 4, `exp` smoothing; effective order at the sentence level only.

use super::{counts, py_split, require_references, AnswerMetricError};
use regex::Regex;
use std::collections::HashMap;
use std::sync::LazyLock;

const MAX_ORDER: usize = 4;

/// sacrebleu's stand-in for log(0).
const LOG_ZERO: f64 = -9_999_999_999.0;

/// A BLEU score and the statistics it was computed from.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Bleu {
    /// BLEU in `[0, 1]` (sacrebleu's figure divided by 100, and at most 1 where rounding puts
    /// sacrebleu a few ulps above 100).
    pub score: f64,
    /// The (smoothed) n-gram precisions for n = 1..4, in `[0, 1]`; 0 for orders the hypothesis
    /// has no n-grams of.
    pub precisions: [f64; MAX_ORDER],
    /// The brevity penalty: 1 when the hypothesis is at least as long as the reference length,
    /// `exp(1 - ref_len / hyp_len)` when shorter, 0 when the hypothesis is empty.
    pub brevity_penalty: f64,
    /// Tokens in the hypothesis (summed over the corpus).
    pub hypothesis_len: usize,
    /// For each hypothesis the length of the reference closest to it in length (the shorter
    /// one on a tie), summed over the corpus.
    pub reference_len: usize,
    /// Clipped n-gram matches for n = 1..4.
    pub matches: [usize; MAX_ORDER],
    /// Hypothesis n-grams for n = 1..4.
    pub totals: [usize; MAX_ORDER],
}

/// sacrebleu's `13a` tokenization (mteval-v13a): the line with trailing whitespace removed,
/// `<skipped>` deleted, `-\n` joined, newlines made spaces, `&quot; &amp; &lt; &gt;` unescaped
/// (in that order), then ASCII punctuation split off (`{|}~[\]^_` `` ` `` ` !"#$%&()*+:;<=>?@/`
/// always; `.` and `,` unless between digits on the relevant side; `-` after a digit), and
/// whitespace runs collapsed to one space. The apostrophe is not split off.
///
/// ```
/// use rag_eval::metrics::answer::tokenize_13a;
///
/// assert_eq!(tokenize_13a("It's 3.14, (roughly)!"), "It's 3.14 , ( roughly ) !");
/// ```
pub fn tokenize_13a(line: &str) -> String {
    static PUNCT: LazyLock<Regex> = LazyLock::new(|| re(r"([{-~\[-` -&(-+:-@/])"));
    static PERIOD_COMMA_AFTER: LazyLock<Regex> = LazyLock::new(|| re(r"([^0-9])([.,])"));
    static PERIOD_COMMA_BEFORE: LazyLock<Regex> = LazyLock::new(|| re(r"([.,])([^0-9])"));
    static DASH_AFTER_DIGIT: LazyLock<Regex> = LazyLock::new(|| re(r"([0-9])(-)"));

    let mut line = line
        .trim_end_matches(super::is_py_space)
        .replace("<skipped>", "")
        .replace("-\n", "")
        .replace('\n', " ");
    if line.contains('&') {
        line = line
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">");
    }
    let line = format!(" {line} ");
    let line = PUNCT.replace_all(&line, " ${1} ");
    let line = PERIOD_COMMA_AFTER.replace_all(&line, "${1} ${2} ");
    let line = PERIOD_COMMA_BEFORE.replace_all(&line, " ${1} ${2}");
    let line = DASH_AFTER_DIGIT.replace_all(&line, "${1} ${2} ");
    py_split(&line).collect::<Vec<_>>().join(" ")
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a valid built-in pattern")
}

/// Sentence-level BLEU of `hypothesis` against one or more `references`, identical to
/// `sacrebleu.sentence_bleu(hypothesis, references).score / 100`.
///
/// Definition (Papineni et al. 2002, as sacrebleu computes it): both sides are tokenized with
/// [`tokenize_13a`] and split on whitespace. For n = 1..4, `matches[n]` is the number of
/// hypothesis n-grams, each counted at most as often as it occurs in the reference where it
/// occurs most, and `totals[n]` the number of hypothesis n-grams. If no n-gram matches at all
/// the score is 0. Otherwise the effective order N is the largest n with `totals[n] > 0`; for
/// n ≤ N the precision is `matches[n] / totals[n]`, or, when `matches[n] = 0`, `1 / (2^k ·
/// totals[n])` where k counts the zero-match orders so far (`exp` smoothing). The score is
/// `BP · exp(mean of log precisions over n ≤ N)`, with the brevity penalty BP taken against
/// the reference closest in length (see [`Bleu::brevity_penalty`]).
///
/// ```
/// use rag_eval::metrics::answer::sentence_bleu;
///
/// let same = sentence_bleu("the cat sat on the mat", &["the cat sat on the mat"])?;
/// assert_eq!(same.score, 1.0);
/// let none = sentence_bleu("a dog", &["the cat sat on the mat"])?;
/// assert_eq!(none.score, 0.0);
/// # Ok::<(), rag_eval::metrics::answer::AnswerMetricError>(())
/// ```
///
/// # Errors
///
/// [`AnswerMetricError::NoReference`] when `references` is empty.
pub fn sentence_bleu<R: AsRef<str>>(
    hypothesis: &str,
    references: &[R],
) -> Result<Bleu, AnswerMetricError> {
    require_references(references, 0)?;
    Ok(compute(&statistics(hypothesis, references), true))
}

/// Corpus-level BLEU, identical to `sacrebleu.corpus_bleu(hypotheses, streams).score / 100`
/// where reference stream j holds each hypothesis' j-th reference (`None` past its last).
///
/// The statistics of [`sentence_bleu`] are summed over the corpus and the score computed once
/// from the sums, without effective order: an order with no hypothesis n-gram anywhere in the
/// corpus counts as precision 0, which makes the score 0 (sacrebleu floors log 0 at
/// −9999999999).
///
/// ```
/// use rag_eval::metrics::answer::corpus_bleu;
///
/// let hypotheses = ["the cat sat on the mat", "the dog barks"];
/// let references = [vec!["the cat sat on the mat"], vec!["a dog barked", "the dog barked loudly"]];
/// let bleu = corpus_bleu(&hypotheses, &references)?;
/// assert_eq!(bleu.hypothesis_len, 9);
/// assert!(bleu.score > 0.8 && bleu.score < 1.0);
/// # Ok::<(), rag_eval::metrics::answer::AnswerMetricError>(())
/// ```
///
/// # Errors
///
/// [`AnswerMetricError::LengthMismatch`] when the two slices differ in length,
/// [`AnswerMetricError::NoReference`] for a hypothesis with no reference.
pub fn corpus_bleu<H, Rs, R>(hypotheses: &[H], references: &[Rs]) -> Result<Bleu, AnswerMetricError>
where
    H: AsRef<str>,
    Rs: AsRef<[R]>,
    R: AsRef<str>,
{
    if hypotheses.len() != references.len() {
        return Err(AnswerMetricError::LengthMismatch {
            answers: hypotheses.len(),
            references: references.len(),
        });
    }
    let mut total = Stats::default();
    for (row, (hypothesis, refs)) in hypotheses.iter().zip(references).enumerate() {
        let refs = refs.as_ref();
        require_references(refs, row)?;
        let stats = statistics(hypothesis.as_ref(), refs);
        total.hypothesis_len += stats.hypothesis_len;
        total.reference_len += stats.reference_len;
        for n in 0..MAX_ORDER {
            total.matches[n] += stats.matches[n];
            total.totals[n] += stats.totals[n];
        }
    }
    Ok(compute(&total, false))
}

#[derive(Debug, Default)]
struct Stats {
    hypothesis_len: usize,
    reference_len: usize,
    matches: [usize; MAX_ORDER],
    totals: [usize; MAX_ORDER],
}

fn ngrams<'a, 'b>(tokens: &'a [&'b str]) -> impl Iterator<Item = &'a [&'b str]> {
    (1..=MAX_ORDER).flat_map(move |n| tokens.windows(n))
}

fn statistics<R: AsRef<str>>(hypothesis: &str, references: &[R]) -> Stats {
    let ref_lines: Vec<String> = references
        .iter()
        .map(|r| tokenize_13a(r.as_ref()))
        .collect();
    let ref_tokens: Vec<Vec<&str>> = ref_lines.iter().map(|l| py_split(l).collect()).collect();
    let ref_lens: Vec<usize> = ref_tokens.iter().map(Vec::len).collect();
    let mut max_ref: HashMap<&[&str], usize> = HashMap::new();
    for tokens in &ref_tokens {
        for (ngram, count) in counts(ngrams(tokens)) {
            let best = max_ref.entry(ngram).or_insert(0);
            *best = (*best).max(count);
        }
    }
    let line = tokenize_13a(hypothesis);
    let tokens: Vec<&str> = py_split(&line).collect();
    let mut stats = Stats {
        hypothesis_len: tokens.len(),
        reference_len: closest_length(tokens.len(), &ref_lens),
        ..Stats::default()
    };
    for (ngram, count) in counts(ngrams(&tokens)) {
        let n = ngram.len() - 1;
        stats.totals[n] += count;
        if let Some(&in_ref) = max_ref.get(ngram) {
            stats.matches[n] += count.min(in_ref);
        }
    }
    stats
}

/// The reference length closest to the hypothesis length, the shorter on a tie.
fn closest_length(hyp_len: usize, ref_lens: &[usize]) -> usize {
    ref_lens
        .iter()
        .copied()
        .min_by_key(|&len| (hyp_len.abs_diff(len), len))
        .unwrap_or(0)
}

fn compute(stats: &Stats, effective_order: bool) -> Bleu {
    let sys_len = stats.hypothesis_len;
    let ref_len = stats.reference_len;
    let brevity_penalty = if sys_len >= ref_len {
        1.0
    } else if sys_len > 0 {
        (1.0 - ref_len as f64 / sys_len as f64).exp()
    } else {
        0.0
    };
    // Percentages, as sacrebleu computes them, so the arithmetic is the same.
    let mut percents = [0.0_f64; MAX_ORDER];
    let mut score = 0.0;
    if stats.matches.iter().any(|&m| m > 0) {
        let mut smooth = 1.0_f64;
        let mut order = MAX_ORDER;
        let orders = percents
            .iter_mut()
            .zip(stats.matches.iter().zip(&stats.totals));
        for (n, (percent, (&matches, &total))) in orders.enumerate() {
            if total == 0 {
                break;
            }
            if effective_order {
                order = n + 1;
            }
            *percent = if matches == 0 {
                smooth *= 2.0;
                100.0 / (smooth * total as f64)
            } else {
                100.0 * matches as f64 / total as f64
            };
        }
        let log_sum: f64 = percents[..order]
            .iter()
            .map(|&p| if p == 0.0 { LOG_ZERO } else { p.ln() })
            .sum();
        // exp(ln 100) is 100.00000000000004: sacrebleu reports that, a score above 1 here.
        score = (brevity_penalty * (log_sum / order as f64).exp() / 100.0).min(1.0);
    }
    Bleu {
        score,
        precisions: percents.map(|p| p / 100.0),
        brevity_penalty,
        hypothesis_len: sys_len,
        reference_len: ref_len,
        matches: stats.matches,
        totals: stats.totals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenize_13a_splits_punctuation_but_not_inside_numbers() {
        assert_eq!(tokenize_13a("Hello, world!"), "Hello , world !");
        assert_eq!(tokenize_13a("1,000.5 and 3-4"), "1,000.5 and 3 - 4");
        assert_eq!(tokenize_13a("end."), "end .");
        assert_eq!(tokenize_13a("a.b"), "a . b");
        assert_eq!(tokenize_13a("x-ray"), "x-ray");
        assert_eq!(tokenize_13a("&amp;lt; &quot;q&quot;"), "< \" q \"");
        assert_eq!(
            tokenize_13a("line-\nbreak\nnext <skipped>"),
            "linebreak next"
        );
        assert_eq!(tokenize_13a("  \t "), "");
        assert_eq!(tokenize_13a("don't"), "don't");
    }

    #[test]
    fn hand_worked_sentence_bleu() {
        // hyp "the cat sat" (3 tokens), ref "the cat sat down" (4 tokens):
        // p1 = 3/3, p2 = 2/2, p3 = 1/1, no 4-grams → effective order 3, geometric mean 1;
        // BP = exp(1 - 4/3).
        let b = sentence_bleu("the cat sat", &["the cat sat down"]).unwrap();
        assert_eq!(b.totals, [3, 2, 1, 0]);
        assert_eq!(b.matches, [3, 2, 1, 0]);
        assert!((b.score - (1.0_f64 - 4.0 / 3.0).exp()).abs() < 1e-15);

        // hyp "a b c d", ref "a b x d": p1 = 3/4, p2 = 1/3, p3 = 0 → 1/(2·2), p4 = 0 → 1/(4·1).
        let b = sentence_bleu("a b c d", &["a b x d"]).unwrap();
        let want = ((0.75_f64 * (1.0 / 3.0) * 0.25 * 0.25).ln() / 4.0).exp();
        assert!((b.score - want).abs() < 1e-12, "{} vs {want}", b.score);
    }

    #[test]
    fn the_closest_reference_sets_the_brevity_penalty() {
        assert_eq!(closest_length(5, &[3, 7, 6]), 6);
        assert_eq!(closest_length(5, &[7, 3]), 3);
        let b = sentence_bleu("a b c", &["a b c d e f g", "a b c"]).unwrap();
        assert_eq!(b.brevity_penalty, 1.0);
        assert_eq!(b.score, 1.0);
    }

    #[test]
    fn empty_sides_score_zero() {
        let b = sentence_bleu("", &["something here"]).unwrap();
        assert_eq!((b.score, b.brevity_penalty), (0.0, 0.0));
        assert_eq!(sentence_bleu("words", &[""]).unwrap().score, 0.0);
        assert_eq!(sentence_bleu("", &[""]).unwrap().score, 0.0);
        assert_eq!(
            sentence_bleu("x", &[] as &[&str]),
            Err(AnswerMetricError::NoReference { row: 0 })
        );
    }

    #[test]
    fn corpus_bleu_without_effective_order_needs_four_grams() {
        // A three-token corpus has no 4-gram, so corpus BLEU is 0 where sentence BLEU is 1.
        assert_eq!(sentence_bleu("a b c", &["a b c"]).unwrap().score, 1.0);
        assert_eq!(corpus_bleu(&["a b c"], &[["a b c"]]).unwrap().score, 0.0);
        assert_eq!(
            corpus_bleu(&["a"], &[] as &[[&str; 1]]),
            Err(AnswerMetricError::LengthMismatch {
                answers: 1,
                references: 0
            })
        );
        assert_eq!(
            corpus_bleu(&["a", "b"], &[vec!["a"], vec![]]),
            Err(AnswerMetricError::NoReference { row: 1 })
        );
    }
}
