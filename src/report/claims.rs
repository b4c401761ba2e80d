//! The claims judge's details in the HTML report: each claim of the answer and of the
//! reference answer with its verdict against the other, and the contexts that entail it, each
//! linked at the characters of its quote (which are marked in the context).

use crate::escape::html as esc;
use crate::metrics::claims::Verdict;
use crate::metrics::{ClaimCheck, JudgeDetails, Passage};
use std::fmt::Write as _;

/// One list of claims: its title, the claims, their checks against the other answer and
/// against each context, and what the other answer is called.
type Side<'a> = (
    &'a str,
    &'a [String],
    &'a [ClaimCheck],
    &'a [Vec<ClaimCheck>],
    &'a str,
);

/// Both lists of claims of `details` (nothing for other details); each entailing context's
/// quote is added to `marks` (per context, relative to its text).
pub(super) fn claims_html(
    s: &mut String,
    details: &JudgeDetails,
    contexts: &[Passage],
    marks: &mut [Vec<(usize, usize)>],
    anchor: &dyn Fn(usize) -> String,
) {
    let JudgeDetails::Claims {
        response_claims,
        reference_claims,
        answer2response,
        response2answer,
        retrieved2response,
        retrieved2answer,
        ..
    } = details
    else {
        return;
    };
    let sides: [Side<'_>; 2] = [
        (
            "The answer's claims",
            response_claims,
            answer2response,
            retrieved2response,
            "the reference",
        ),
        (
            "The reference's claims",
            reference_claims,
            response2answer,
            retrieved2answer,
            "the answer",
        ),
    ];
    for (title, claims, other, chunks, against) in sides {
        let _ = write!(s, "<p>{title}</p><ul class=\"statements\">");
        for ((claim, check), row) in claims.iter().zip(other).zip(chunks) {
            let holds = check.verdict == Verdict::Entailment;
            let mut sources = Vec::new();
            for (j, c) in row.iter().enumerate() {
                if let Some(sup) = &c.support {
                    let start = contexts.get(j).map(|p| p.start);
                    if let (Some(start), Some(m)) = (start, marks.get_mut(j)) {
                        m.push((
                            sup.span.start.saturating_sub(start),
                            sup.span.end.saturating_sub(start),
                        ));
                    }
                    sources.push(format!(
                        "<a href=\"#{}\">context {}, characters {}–{}</a>",
                        anchor(j),
                        j + 1,
                        sup.span.start,
                        sup.span.end
                    ));
                } else if c.unlocated {
                    sources.push(format!(
                        "<span class=\"muted\">context {} (quote not found)</span>",
                        j + 1
                    ));
                }
            }
            let sources = if sources.is_empty() {
                "in no context".to_owned()
            } else {
                format!("in {}", sources.join(", "))
            };
            let _ = write!(
                s,
                "<li class=\"{}\">{} {} <span class=\"reason\">— {:?} by {against}; {sources}</span></li>",
                if holds { "supported" } else { "unsupported" },
                if holds { "✓" } else { "✗" },
                esc(claim),
                check.verdict,
            );
        }
        s.push_str("</ul>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::PositionAwareChunk;
    use crate::locate::MatchKind;
    use crate::metrics::Support;
    use crate::span::CharSpan;

    #[test]
    fn each_claim_shows_its_verdict_and_links_the_characters_of_the_contexts_entailing_it() {
        let chunk = PositionAwareChunk::new("doc.md", 100, 153, "x".repeat(53));
        let entailed = ClaimCheck {
            support: Some(Support {
                context: 0,
                chunk_id: chunk.id.clone(),
                span: CharSpan::new("doc.md", 111, 137),
                kind: MatchKind::Exact,
                score: 1.0,
            }),
            ..ClaimCheck::of(Verdict::Entailment)
        };
        let unlocated = ClaimCheck {
            unlocated: true,
            ..ClaimCheck::of(Verdict::Neutral)
        };
        let details = JudgeDetails::Claims {
            response_claims: vec!["Flags are kept in memory.".into(), "Flags <change>.".into()],
            reference_claims: vec!["Flags are kept in memory.".into()],
            chunks: 1,
            answer2response: vec![
                ClaimCheck::of(Verdict::Entailment),
                ClaimCheck::of(Verdict::Contradiction),
            ],
            response2answer: vec![ClaimCheck::of(Verdict::Entailment)],
            retrieved2response: vec![vec![entailed.clone()], vec![unlocated]],
            retrieved2answer: vec![vec![entailed]],
        };
        let contexts = [Passage {
            doc_id: "doc.md".into(),
            start: 100,
            end: 153,
            text: None,
            located: true,
            not_found: None,
        }];
        let mut marks = vec![Vec::new()];
        let mut s = String::new();
        claims_html(&mut s, &details, &contexts, &mut marks, &|i| {
            format!("c{i}")
        });
        assert!(s.contains("✓ Flags are kept in memory. <span class=\"reason\">— Entailment by the reference; in <a href=\"#c0\">context 1, characters 111–137</a>"), "{s}");
        assert!(s.contains("✗ Flags &lt;change&gt;. <span class=\"reason\">— Contradiction by the reference; in <span class=\"muted\">context 1 (quote not found)</span>"), "{s}");
        assert!(s.contains("<p>The reference's claims</p>"), "{s}");
        assert_eq!(marks[0], [(11, 37), (11, 37)]);
    }
}
