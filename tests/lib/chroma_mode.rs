//! The Chroma-compatible token-level mode: one hand-worked case per rule, and a check against
//! figures produced by a transcription of chunking_evaluation's scoring
//! (tests/fixtures/chroma/, see its README).

use crate::shared_data;

use rag_eval::corpus::Corpus;
use rag_eval::dataset::import::chroma_csv;
use rag_eval::level::TokenLevel;
use rag_eval::metrics::{
    chunking_evaluation_scores, mean_std, ChunkIndex, ChunkingEvaluationScores, Metric,
    MetricInput, PrecisionOmega, SpanIou, SpanMode, SpanPrecision, SpanRecall,
};
use rag_eval::span::CharSpan;
use serde::Deserialize;
use std::path::Path;

fn sp(doc: &str, start: usize, end: usize) -> CharSpan {
    CharSpan::new(doc, start, end)
}

/// Chroma-mode recall, precision, IoU (and Ω over `chunks`), through both entry points.
fn chroma(
    retrieved: &[CharSpan],
    truth: &[CharSpan],
    chunks: &[CharSpan],
) -> ChunkingEvaluationScores {
    let index = ChunkIndex::new(chunks);
    let scores = chunking_evaluation_scores(retrieved, truth, Some(&index));
    let truth_vec = truth.to_vec();
    let input = MetricInput::<TokenLevel>::new(retrieved, &truth_vec, retrieved.len())
        .with_chunker_output(chunks);
    let by_metric = [
        SpanRecall::new(SpanMode::Chroma).compute(&input),
        SpanPrecision::new(SpanMode::Chroma).compute(&input),
        SpanIou::new(SpanMode::Chroma).compute(&input),
        PrecisionOmega::new().compute(&input),
    ];
    assert_eq!(
        by_metric,
        [
            scores.recall,
            scores.precision,
            scores.iou,
            scores.precision_omega.unwrap()
        ],
        "the metrics and chunking_evaluation_scores disagree"
    );
    scores
}

fn standard(retrieved: &[CharSpan], truth: &[CharSpan]) -> [f64; 3] {
    let truth = truth.to_vec();
    let input = MetricInput::<TokenLevel>::new(retrieved, &truth, retrieved.len());
    [
        SpanRecall::default().compute(&input),
        SpanPrecision::default().compute(&input),
        SpanIou::default().compute(&input),
    ]
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12
}

#[test]
fn touching_ranges_meet_but_share_no_character() {
    let truth = [sp("d", 10, 20)];
    // 0..10 touches the truth: it adds 10 to Σ|r| and nothing to N = |12..18| = 6.
    let retrieved = [sp("d", 0, 10), sp("d", 12, 18)];
    // For Ω, 0..10 and 20..30 touch the truth and so enter the denominator; 31..40 does not
    // meet it (31 > 20). N_Ω = |10..20| = 10, denominator |0..30| = 30.
    let chunks = [
        sp("d", 0, 10),
        sp("d", 10, 15),
        sp("d", 15, 20),
        sp("d", 20, 30),
        sp("d", 31, 40),
    ];
    let s = chroma(&retrieved, &truth, &chunks);
    assert_eq!(s.recall, 6.0 / 10.0);
    assert_eq!(s.precision, 6.0 / 16.0);
    // U = 10 − 6 = 4; IoU = 6 / (16 + 4).
    assert_eq!(s.iou, 6.0 / 20.0);
    assert_eq!(s.precision_omega, Some(10.0 / 30.0));

    // Only touching chunks: no character in common anywhere, all figures 0.
    let s = chroma(
        &[sp("d", 20, 25)],
        &truth,
        &[sp("d", 0, 10), sp("d", 20, 25)],
    );
    assert_eq!(
        (s.recall, s.precision, s.iou, s.precision_omega),
        (0.0, 0.0, 0.0, Some(0.0))
    );
}

#[test]
fn chunks_from_other_documents_count_in_precision_only() {
    let truth = [sp("a", 50, 150)];
    // b's 50..150 has the truth's offsets but another document: it never meets the truth.
    let retrieved = [sp("a", 0, 100), sp("b", 50, 150)];
    // Ω ignores b's chunk even though it spans the truth's offsets.
    let chunks = [sp("a", 0, 100), sp("a", 100, 200), sp("b", 0, 1000)];
    let s = chroma(&retrieved, &truth, &chunks);
    assert_eq!(s.recall, 50.0 / 100.0);
    assert_eq!(s.precision, 50.0 / 200.0);
    // U = |100..150| = 50; IoU = 50 / (200 + 50).
    assert_eq!(s.iou, 50.0 / 250.0);
    assert_eq!(s.precision_omega, Some(100.0 / 200.0));
    // The standard mode agrees here: the documents do not overlap.
    assert_eq!(standard(&retrieved, &truth), [0.5, 0.25, 50.0 / 250.0]);
}

#[test]
fn overlapping_retrieved_chunks_are_summed_not_merged() {
    let truth = [sp("d", 20, 80)];
    let retrieved = [sp("d", 0, 60), sp("d", 40, 100)];
    let s = chroma(&retrieved, &truth, &retrieved);
    // N = |20..80| = 60, counted once although both chunks cover 40..60.
    assert_eq!(s.recall, 1.0);
    // Σ|r| = 60 + 60 = 120 (the standard mode's |R| is |0..100| = 100).
    assert_eq!(s.precision, 0.5);
    assert_eq!(s.iou, 0.5);
    // Ω takes a true union of the chunks: 60 / |0..100|.
    assert_eq!(s.precision_omega, Some(0.6));
    assert_eq!(standard(&retrieved, &truth), [1.0, 0.6, 0.6]);
}

#[test]
fn several_references_per_question() {
    let truth = [sp("d", 0, 10), sp("d", 50, 70)];
    let retrieved = [sp("d", 5, 55)];
    let chunks = [sp("d", 0, 40), sp("d", 40, 80)];
    let s = chroma(&retrieved, &truth, &chunks);
    // N = |5..10| + |50..55| = 10; Σ|g| = 30; Σ|r| = 50; U = 5 + 15 = 20.
    assert_eq!(s.recall, 10.0 / 30.0);
    assert_eq!(s.precision, 10.0 / 50.0);
    assert_eq!(s.iou, 10.0 / 70.0);
    // Both chunks meet a reference: N_Ω = 30, denominator |0..80| = 80.
    assert_eq!(s.precision_omega, Some(30.0 / 80.0));
}

#[test]
fn overlapping_references_are_not_merged() {
    // Two references share 5..10; the retrieved chunk covers 0..5 and touches the second.
    let truth = [sp("d", 0, 10), sp("d", 5, 15)];
    let retrieved = [sp("d", 0, 5)];
    let s = chroma(&retrieved, &truth, &[sp("d", 0, 15)]);
    // Σ|g| = 10 + 10 = 20 (not |0..15| = 15).
    assert_eq!(s.recall, 5.0 / 20.0);
    assert_eq!(s.precision, 1.0);
    // U = |5..10| + |5..15| = 5 + 10 = 15, each reference on its own.
    assert_eq!(s.iou, 5.0 / (5.0 + 15.0));
    // Ω merges: N_Ω = |0..15| = 15 over |0..15|.
    assert_eq!(s.precision_omega, Some(1.0));
    assert_eq!(standard(&retrieved, &truth), [5.0 / 15.0, 1.0, 5.0 / 15.0]);
}

#[test]
fn a_reference_met_by_two_chunks() {
    let truth = [sp("d", 100, 200)];
    let retrieved = [sp("d", 50, 130), sp("d", 170, 260)];
    let s = chroma(&retrieved, &truth, &retrieved);
    // N = 30 + 30; Σ|r| = 80 + 90; U = |130..170| = 40.
    assert_eq!(s.recall, 0.6);
    assert_eq!(s.precision, 60.0 / 170.0);
    assert_eq!(s.iou, 60.0 / 210.0);
    // Ω: 60 / |50..260|.
    assert_eq!(s.precision_omega, Some(60.0 / 210.0));

    // Two chunks overlapping inside the reference: their intersections merge, N = 100.
    let retrieved = [sp("d", 100, 160), sp("d", 140, 200)];
    let s = chroma(&retrieved, &truth, &retrieved);
    assert_eq!(s.recall, 1.0);
    assert_eq!(s.precision, 100.0 / 120.0);
    assert_eq!(s.iou, 100.0 / 120.0);
    assert_eq!(s.precision_omega, Some(1.0));
}

#[test]
fn empty_retrieval_and_empty_truth_score_zero() {
    let truth = [sp("d", 0, 10)];
    let s = chroma(&[], &truth, &[]);
    assert_eq!(
        (s.recall, s.precision, s.iou, s.precision_omega),
        (0.0, 0.0, 0.0, Some(0.0))
    );
    let s = chroma(&[sp("d", 0, 10)], &[], &[sp("d", 0, 10)]);
    assert_eq!(
        (s.recall, s.precision, s.iou, s.precision_omega),
        (0.0, 0.0, 0.0, Some(0.0))
    );
    // Nothing retrieved, nothing to find: the reference divides by zero and scores 0, where
    // the standard mode's IoU is 1.
    let s = chroma(&[], &[], &[]);
    assert_eq!((s.recall, s.precision, s.iou), (0.0, 0.0, 0.0));
    assert_eq!(standard(&[], &[]), [0.0, 0.0, 1.0]);
    // k = 0 cuts everything.
    let t = truth.to_vec();
    let r = [sp("d", 0, 10)];
    let input = MetricInput::<TokenLevel>::new(&r, &t, 0);
    assert_eq!(SpanRecall::new(SpanMode::Chroma).compute(&input), 0.0);
    assert_eq!(
        chunking_evaluation_scores(&r, &t, None).precision_omega,
        None
    );
}

#[test]
fn precision_omega_with_chunks_spanning_two_references() {
    let truth = [sp("d", 10, 20), sp("d", 30, 40)];
    // 0..50 meets both references and counts once; 50..60 meets neither (50 > 40).
    let chunks = [sp("d", 0, 50), sp("d", 50, 60)];
    let s = chroma(&[sp("d", 0, 50)], &truth, &chunks);
    assert_eq!(s.precision_omega, Some(20.0 / 50.0));
    // Retrieval: N = 20 of Σ|g| = 20, Σ|r| = 50, U = 0.
    assert_eq!((s.recall, s.precision, s.iou), (1.0, 0.4, 0.4));

    // One chunk per reference plus one spanning both: union |0..60| = 60.
    let chunks = [sp("d", 0, 15), sp("d", 15, 35), sp("d", 35, 60)];
    assert_eq!(
        chroma(&[], &truth, &chunks).precision_omega,
        Some(20.0 / 60.0)
    );

    // A truth span no chunk meets stays in the denominator whole.
    let truth = [sp("d", 10, 20), sp("d", 100, 130)];
    let chunks = [sp("d", 0, 25)];
    assert_eq!(
        chroma(&[], &truth, &chunks).precision_omega,
        Some(10.0 / (25.0 + 30.0))
    );
}

#[test]
fn metric_names_and_cut_off() {
    let omega = PrecisionOmega::new();
    assert_eq!(
        Metric::<TokenLevel>::report_name(&omega, 5),
        "precision_omega"
    );
    assert!(Metric::<TokenLevel>::needs_chunker_output(&omega));
    assert_eq!(
        SpanRecall::new(SpanMode::Chroma).report_name(5),
        "span_recall@5"
    );
    // The metrics cut at k; the retrieved list beyond k is ignored.
    let truth = vec![sp("d", 0, 10)];
    let retrieved = [sp("d", 0, 10), sp("d", 100, 200)];
    let input = MetricInput::<TokenLevel>::new(&retrieved, &truth, 1);
    assert_eq!(SpanPrecision::new(SpanMode::Chroma).compute(&input), 1.0);
}

// --- the reference figures ------------------------------------------------------------------

#[derive(Deserialize)]
struct Fixture {
    chunk_size: usize,
    chunk_overlap: usize,
    k: usize,
    corpus_chars: std::collections::BTreeMap<String, usize>,
    summary: std::collections::BTreeMap<String, Summary>,
    questions: Vec<Question>,
}

#[derive(Deserialize)]
struct Summary {
    mean: f64,
    std: f64,
}

#[derive(Deserialize)]
struct Question {
    row: usize,
    doc: String,
    retrieved: Vec<(String, usize, usize)>,
    recall: f64,
    precision: f64,
    iou: f64,
    precision_omega: f64,
}

/// Fixed windows of `size` characters every `size - overlap`, the last ending at `len`.
fn windows(doc: &str, len: usize, size: usize, overlap: usize) -> Vec<CharSpan> {
    let mut out = Vec::new();
    let mut start = 0;
    loop {
        let end = (start + size).min(len);
        out.push(sp(doc, start, end));
        if end >= len {
            return out;
        }
        start += size - overlap;
    }
}

#[test]
#[ignore = "needs ../shared/data"]
fn matches_chunking_evaluation_on_the_general_set() {
    let data = shared_data::chunking_eval_general();
    let fixture_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/chroma/general_400_100_k5.json");
    let fixture: Fixture =
        serde_json::from_str(&std::fs::read_to_string(&fixture_path).unwrap()).unwrap();
    let root = camino::Utf8PathBuf::from_path_buf(data.clone()).unwrap();
    let corpus = Corpus::from_folder(root.join("corpora"), Some("*.md")).unwrap();
    let dataset = chroma_csv(root.join("questions_df.csv"), &corpus).unwrap();
    assert_eq!(dataset.len(), 472);
    assert_eq!(fixture.questions.len(), dataset.len());

    let mut chunks = Vec::new();
    for doc in corpus.documents() {
        assert_eq!(
            fixture.corpus_chars.get(doc.id().as_str()),
            Some(&doc.char_len()),
            "{} has another length than when the fixture was made",
            doc.id()
        );
        chunks.extend(windows(
            doc.id().as_str(),
            doc.char_len(),
            fixture.chunk_size,
            fixture.chunk_overlap,
        ));
    }
    let index = ChunkIndex::new(&chunks);
    let metrics: [Box<dyn Metric<TokenLevel>>; 4] = [
        Box::new(SpanRecall::new(SpanMode::Chroma)),
        Box::new(SpanPrecision::new(SpanMode::Chroma)),
        Box::new(SpanIou::new(SpanMode::Chroma)),
        Box::new(PrecisionOmega::new()),
    ];

    let mut columns: [Vec<f64>; 4] = Default::default();
    for (q, example) in fixture.questions.iter().zip(dataset.examples()) {
        assert!(example.truth.iter().all(|t| t.doc.as_str() == q.doc));
        let retrieved: Vec<CharSpan> = q.retrieved.iter().map(|(d, s, e)| sp(d, *s, *e)).collect();
        let s = chunking_evaluation_scores(&retrieved[..fixture.k], &example.truth, Some(&index));
        let want = [q.recall, q.precision, q.iou, q.precision_omega];
        let got = [s.recall, s.precision, s.iou, s.precision_omega.unwrap()];
        for (name, (g, w)) in ["recall", "precision", "iou", "precision_omega"]
            .iter()
            .zip(got.iter().zip(want))
        {
            assert!(close(*g, w), "row {}: {name} {g} != {w}", q.row);
        }
        let input =
            MetricInput::new(&retrieved, &example.truth, fixture.k).with_chunker_output(&chunks);
        for (m, g) in metrics.iter().zip(got) {
            assert_eq!(m.compute(&input), g, "row {}: {}", q.row, m.name());
        }
        for (col, g) in columns.iter_mut().zip(got) {
            col.push(g);
        }
    }
    for (name, col) in ["recall", "precision", "iou", "precision_omega"]
        .iter()
        .zip(&columns)
    {
        let (mean, std) = mean_std(col);
        let want = &fixture.summary[*name];
        assert!(
            close(mean, want.mean),
            "{name} mean {mean} != {}",
            want.mean
        );
        assert!(close(std, want.std), "{name} std {std} != {}", want.std);
        eprintln!("{name:16} {:6.2} ± {:5.2} %", 100.0 * mean, 100.0 * std);
    }
}
