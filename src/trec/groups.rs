//! trec_eval's qrels with judgement groups (`-R qrels_jg`) and the measures averaged over
//! them (`map_avgjg`, `P_avgjg`, `Rprec_mult_avgjg`).
//!
//! A `qrels_jg` file is a qrels file whose second column names a judgement group (one user's
//! judgements) instead of an ignored iteration: each group judges the query on its own, a
//! measure is computed against each group's judgements and averaged over the groups
//! (get_qrels_jg.c, form_res_rels_jg.c).

use super::measures::{self as m, Ranked};

/// One judgement group's judgements: `(docno, grade)`, sorted by docno.
pub type Group<'a> = Vec<(&'a [u8], i64)>;

/// One query of a `qrels_jg` file: its id and its groups' judgements.
pub type GroupedQuery<'a> = (&'a [u8], Vec<Group<'a>>);

/// What is wrong with a `qrels_jg` file.
#[derive(Debug, Clone, PartialEq)]
pub enum GroupsError {
    /// The `n`th line read (comments left out) does not have four fields.
    Malformed(usize),
    /// A group judges this document twice.
    Duplicate(String),
}

/// Reads a `qrels_jg` file: `qid jg docno grade` lines, `#` starting a comment line. Queries
/// come sorted by id, each with its groups sorted by name.
pub fn read_qrels_jg(text: &[u8]) -> std::result::Result<Vec<GroupedQuery<'_>>, GroupsError> {
    let mut lines: Vec<[&[u8]; 4]> = Vec::new();
    for line in text
        .strip_suffix(b"\n")
        .unwrap_or(text)
        .split(|&b| b == b'\n')
    {
        if line.first() == Some(&b'#') {
            continue;
        }
        let f = super::prefs::fields(line);
        let [qid, jg, docno, grade] = f[..] else {
            return Err(GroupsError::Malformed(lines.len() + 1));
        };
        lines.push([qid, jg, docno, grade]);
    }
    lines.sort_by(|a, b| a[0].cmp(b[0]).then(a[1].cmp(b[1])).then(a[2].cmp(b[2])));
    if let Some(w) = lines.windows(2).find(|w| w[0][..3] == w[1][..3]) {
        return Err(GroupsError::Duplicate(
            String::from_utf8_lossy(w[1][2]).into_owned(),
        ));
    }
    let mut out: Vec<GroupedQuery<'_>> = Vec::new();
    let mut last_jg: &[u8] = b"";
    for [qid, jg, docno, grade] in lines {
        let doc = (docno, m::atol(grade));
        match out.last_mut() {
            Some((q, groups)) if *q == qid => match groups.last_mut() {
                Some(g) if jg == last_jg => g.push(doc),
                _ => groups.push(vec![doc]),
            },
            _ => out.push((qid, vec![vec![doc]])),
        }
        last_jg = jg;
    }
    Ok(out)
}

/// Sums `f` of each group's ranking, divided by the number of groups when there are several
/// (trec_eval adds each group's figure, then divides).
fn averaged(groups: &[Ranked], width: usize, f: impl Fn(&Ranked) -> Vec<f64>) -> Vec<f64> {
    let mut out = vec![0.0; width];
    for g in groups {
        for (o, v) in out.iter_mut().zip(f(g)) {
            *o += v;
        }
    }
    if groups.len() > 1 {
        out.iter_mut().for_each(|o| *o /= groups.len() as f64);
    }
    out
}

/// `map_avgjg` (m_map_avgjg.c): average precision against each group's judgements, averaged
/// over the groups.
pub fn map_avgjg(groups: &[Ranked]) -> f64 {
    averaged(groups, 1, |r| vec![m::average_precision(r)])[0]
}

/// `P_avgjg_k` (m_P_avgjg.c): precision at each cut-off, averaged over the groups.
pub fn precision_avgjg(groups: &[Ranked], cutoffs: &[i64]) -> Vec<f64> {
    averaged(groups, cutoffs.len(), |r| m::precision(r, cutoffs))
}

/// `Rprec_mult_avgjg_x` (m_Rprec_mult_avgjg.c): precision at `x` × R documents, R each
/// group's number of relevant documents, averaged over the groups.
pub fn r_precision_mult_avgjg(groups: &[Ranked], multiples: &[f64]) -> Vec<f64> {
    averaged(groups, multiples.len(), |r| {
        m::r_precision_mult(r, multiples)
    })
}
