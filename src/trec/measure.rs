//! trec_eval's measures: names, cut-offs and the value of each for one query.

use crate::error::{Error, Result, SettingError};
use crate::metrics::{
    average_precision, ndcg_at_k, precision_at_k, recall_at_k, reciprocal_rank, Grade,
};
use std::fmt;

/// A trec_eval measure, at a cut-off where it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Measure {
    /// `P_k`: relevant among the first `k`, divided by `k`.
    Precision(usize),
    /// `recall_k`: relevant among the first `k`, divided by the relevant judged.
    Recall(usize),
    /// `ndcg_cut_k`: graded nDCG at `k`.
    Ndcg(usize),
    /// `ndcg`: graded nDCG over the whole ranking, against every judged grade (no cut-off).
    NdcgFull,
    /// `recip_rank`: 1 / rank of the first relevant document.
    ReciprocalRank,
    /// `map`: average precision.
    AveragePrecision,
}

impl Measure {
    /// trec_eval's default cut-offs for `P`, `recall` and `ndcg_cut`.
    pub const DEFAULT_CUTOFFS: [usize; 9] = [5, 10, 15, 20, 30, 100, 200, 500, 1000];

    /// The default measure set: `P`, `recall` and `ndcg_cut` at `cutoffs` (trec_eval's
    /// [`DEFAULT_CUTOFFS`](Self::DEFAULT_CUTOFFS) when empty), `recip_rank` and `map`.
    ///
    /// ```
    /// use rag_eval::trec::Measure;
    /// let names: Vec<String> = Measure::defaults(&[10]).iter().map(|m| m.trec_name()).collect();
    /// assert_eq!(names, ["P_10", "recall_10", "ndcg_cut_10", "recip_rank", "map"]);
    /// assert_eq!(Measure::defaults(&[]).len(), 3 * 9 + 2);
    /// ```
    pub fn defaults(cutoffs: &[usize]) -> Vec<Measure> {
        let cutoffs = if cutoffs.is_empty() {
            &Self::DEFAULT_CUTOFFS[..]
        } else {
            cutoffs
        };
        let mut all: Vec<Measure> = Vec::with_capacity(3 * cutoffs.len() + 2);
        all.extend(cutoffs.iter().map(|&k| Measure::Precision(k)));
        all.extend(cutoffs.iter().map(|&k| Measure::Recall(k)));
        all.extend(cutoffs.iter().map(|&k| Measure::Ndcg(k)));
        all.push(Measure::ReciprocalRank);
        all.push(Measure::AveragePrecision);
        all
    }

    /// Measures from a name: trec_eval's `P`, `recall`, `ndcg_cut`, `ndcg`, `recip_rank`,
    /// `map`, with cut-offs written `P.5,10` or `P_5`; rag-eval's report names
    /// (`precision@10`, `recall`, `ndcg@10`, `mrr`, `map`) are accepted too. A name without
    /// cut-offs of its own takes `cutoffs`, or trec_eval's defaults when that is empty;
    /// `ndcg`, `recip_rank` and `map` ignore cut-offs (trec_eval's `ndcg` is over the whole
    /// ranking; `ndcg_cut` is the one with cut-offs). Cut-offs must be at least 1; repeats
    /// are dropped.
    ///
    /// ```
    /// use rag_eval::trec::Measure;
    /// assert_eq!(Measure::parse("P.5,10", &[])?, [Measure::Precision(5), Measure::Precision(10)]);
    /// assert_eq!(Measure::parse("ndcg_cut_3", &[])?, [Measure::Ndcg(3)]);
    /// assert_eq!(Measure::parse("ndcg", &[10])?, [Measure::NdcgFull]);
    /// assert_eq!(Measure::parse("recall", &[20])?, [Measure::Recall(20)]);
    /// assert_eq!(Measure::parse("mrr", &[5])?, [Measure::ReciprocalRank]);
    /// assert!(Measure::parse("bpref", &[]).is_err());
    /// # Ok::<(), rag_eval::Error>(())
    /// ```
    pub fn parse(name: &str, cutoffs: &[usize]) -> Result<Vec<Measure>> {
        let name = name.trim();
        let (base, own) = split_cutoffs(name)?;
        let at_k: Option<fn(usize) -> Measure> = match base {
            "P" | "precision" => Some(Measure::Precision),
            "recall" => Some(Measure::Recall),
            "ndcg_cut" => Some(Measure::Ndcg),
            // `ndcg@10` is rag-eval's report name for `ndcg_cut_10`.
            "ndcg" if name.contains('@') => Some(Measure::Ndcg),
            "ndcg" if own.is_empty() => return Ok(vec![Measure::NdcgFull]),
            "ndcg" => {
                let own = own
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(",");
                return Err(SettingError::new(
                    format!("measure `{name}`"),
                    "cut-off",
                    &own,
                    format!("is not taken: trec_eval's `ndcg` is over the whole ranking and takes no cut-off; nDCG at a cut-off is `ndcg_cut` (`ndcg_cut.{own}`)"),
                )
                .into());
            }
            "recip_rank" | "mrr" => return Ok(vec![Measure::ReciprocalRank]),
            "map" => return Ok(vec![Measure::AveragePrecision]),
            _ => None,
        };
        let Some(make) = at_k else {
            return Err(Error::Unknown {
                what: "measure",
                given: name.to_owned(),
                known: "known: P, recall, ndcg_cut, ndcg, recip_rank, map, with cut-offs as in \
                        `P.5,10` or `P_5`; `rag-eval score --qrels` also takes every other \
                        per-query trec_eval measure (`bpref`, `infAP`, `rbp`, `success_5`: \
                        `rag-eval trec_eval -h` lists them)"
                    .into(),
            });
        };
        let chosen: Vec<usize> = match (own.is_empty(), cutoffs.is_empty()) {
            (false, _) => own,
            (true, false) => cutoffs.to_vec(),
            (true, true) => Self::DEFAULT_CUTOFFS.to_vec(),
        };
        if chosen.contains(&0) {
            return Err(SettingError::new(
                format!("measure `{name}`"),
                "cut-offs",
                0,
                "must be at least 1",
            )
            .into());
        }
        let mut out: Vec<Measure> = Vec::with_capacity(chosen.len());
        for k in chosen {
            let m = make(k);
            if !out.contains(&m) {
                out.push(m);
            }
        }
        Ok(out)
    }

    /// The cut-off, for the measures that have one.
    pub fn cutoff(&self) -> Option<usize> {
        match *self {
            Measure::Precision(k) | Measure::Recall(k) | Measure::Ndcg(k) => Some(k),
            Measure::NdcgFull | Measure::ReciprocalRank | Measure::AveragePrecision => None,
        }
    }

    /// The name rag-eval reports: `precision@10`, `recall@10`, `ndcg@10`, `ndcg`, `mrr`, `map`.
    pub fn report_name(&self) -> String {
        match *self {
            Measure::Precision(k) => format!("precision@{k}"),
            Measure::Recall(k) => format!("recall@{k}"),
            Measure::Ndcg(k) => format!("ndcg@{k}"),
            Measure::NdcgFull => "ndcg".to_owned(),
            Measure::ReciprocalRank => "mrr".to_owned(),
            Measure::AveragePrecision => "map".to_owned(),
        }
    }

    /// The name trec_eval prints: `P_10`, `recall_10`, `ndcg_cut_10`, `ndcg`, `recip_rank`,
    /// `map`.
    pub fn trec_name(&self) -> String {
        match *self {
            Measure::Precision(k) => format!("P_{k}"),
            Measure::Recall(k) => format!("recall_{k}"),
            Measure::Ndcg(k) => format!("ndcg_cut_{k}"),
            Measure::NdcgFull => "ndcg".to_owned(),
            Measure::ReciprocalRank => "recip_rank".to_owned(),
            Measure::AveragePrecision => "map".to_owned(),
        }
    }

    /// The value for one query from its grades in rank order, its number of relevant judged
    /// documents and its ideal grades.
    pub(super) fn value(&self, grades: &[Grade], num_relevant: usize, ideal: &[Grade]) -> f64 {
        match *self {
            Measure::Precision(k) => precision_at_k(grades, k),
            Measure::Recall(k) => recall_at_k(grades, k, num_relevant),
            Measure::Ndcg(k) => ndcg_at_k(grades, ideal, k),
            Measure::NdcgFull => ndcg_at_k(grades, ideal, usize::MAX),
            Measure::ReciprocalRank => reciprocal_rank(grades),
            Measure::AveragePrecision => average_precision(grades, num_relevant),
        }
    }
}

impl fmt::Display for Measure {
    /// The trec_eval name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.trec_name())
    }
}

/// Splits `P.5,10`, `P_5` and `precision@5` into the base name and its cut-offs.
fn split_cutoffs(name: &str) -> Result<(&str, Vec<usize>)> {
    let bad = |list: &str| {
        Error::from(SettingError::new(
            format!("measure `{name}`"),
            "cut-offs",
            format!("`{list}`"),
            "must be positive integers",
        ))
    };
    let parse_list = |list: &str| -> Result<Vec<usize>> {
        list.split(',')
            .map(|k| k.trim().parse::<usize>().map_err(|_| bad(list)))
            .collect()
    };
    if let Some((base, list)) = name.split_once('.').or_else(|| name.split_once('@')) {
        return Ok((base, parse_list(list)?));
    }
    // `P_5`, `recall_10`, `ndcg_cut_20`: a trailing `_digits` is a cut-off
    if let Some((base, k)) = name.rsplit_once('_') {
        if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) {
            return Ok((base, parse_list(k)?));
        }
    }
    Ok((name, Vec::new()))
}
