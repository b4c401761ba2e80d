//! trec_eval 10.0's measures as functions of one query's judged ranking.
//!
//! Each function follows the `m_*.c` file of trec_eval named in its doc, including its
//! conventions where a textbook definition would differ (a cut-off beyond the ranking counts
//! the missing documents as non-relevant, an empty figure is 0, `ndcg_cut` gains the grade
//! itself): the point is that `rag-eval trec_eval` prints the figures trec_eval prints.

/// The relevance of a retrieved document that is not in the qrels at all.
pub const NONPOOL: i64 = -1;
/// The relevance of a retrieved document in the qrels with a negative grade (pooled, not judged).
pub const UNJUDGED: i64 = -2;
/// `MIN_GEO_MEAN`: the floor of a value before its logarithm is taken for `gm_map`, `gm_bpref`.
pub const MIN_GEO_MEAN: f64 = 0.00001;
const INFAP_EPSILON: f64 = 0.00001;

/// `log2(n)`, from a table for the ranks of most rankings: the discount of `ndcg` and its kin,
/// looked up rather than computed for every document (the same values: `log2` of the same
/// number).
#[inline]
fn log2_of(n: usize) -> f64 {
    static TABLE: std::sync::OnceLock<Box<[f64]>> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| (0..4096).map(|n| (n as f64).log2()).collect());
    match table.get(n) {
        Some(&v) => v,
        None => (n as f64).log2(),
    }
}

/// One query's ranking joined with its judgements (trec_eval's `RES_RELS`).
#[derive(Debug, Clone, Default)]
pub struct Ranked {
    /// The grade of each retrieved document in rank order: the qrels grade, [`NONPOOL`] or
    /// [`UNJUDGED`].
    pub rels: Vec<i64>,
    /// How many documents of the qrels have each grade 0, 1, 2, … (negative grades left out).
    pub rel_levels: Vec<u64>,
    /// The grade from which a document is relevant (`-l`, 1 by default).
    pub level: i64,
    /// Relevant documents in the qrels.
    pub num_rel: u64,
    /// Relevant documents retrieved.
    pub num_rel_ret: u64,
    /// Retrieved documents not in the qrels.
    pub num_nonpool: u64,
    /// Retrieved documents in the qrels with a negative grade.
    pub num_unjudged: u64,
}

impl Ranked {
    /// Documents retrieved.
    pub fn num_ret(&self) -> usize {
        self.rels.len()
    }

    fn relevant(&self, rel: i64) -> bool {
        rel >= self.level
    }

    /// `num_rel_levels`: one more than the highest grade with a judged document.
    pub fn num_rel_levels(&self) -> usize {
        self.rel_levels
            .iter()
            .rposition(|&n| n > 0)
            .map_or(0, |i| i + 1)
    }

    /// Judged non-relevant documents in the qrels (grades below the level).
    fn num_nonrel(&self) -> u64 {
        (0..self.level.max(0) as usize)
            .map(|j| self.rel_levels.get(j).copied().unwrap_or(0))
            .sum()
    }
}

/// Per cut-off `k` (ascending), `f(k, hits in the first k)` where a hit is what `hit` says:
/// trec_eval's cut-off loop, shared by `P`, `recall`, `success`, `relative_P`, `unj`.
fn at_cutoffs(
    r: &Ranked,
    cutoffs: &[i64],
    hit: impl Fn(i64) -> bool,
    f: impl Fn(i64, u64) -> f64,
) -> Vec<f64> {
    let mut out = Vec::with_capacity(cutoffs.len());
    let mut so_far = 0u64;
    for (i, &rel) in r.rels.iter().enumerate() {
        while out.len() < cutoffs.len() && i as i64 == cutoffs[out.len()] {
            out.push(f(i as i64, so_far));
        }
        if out.len() == cutoffs.len() {
            break;
        }
        if hit(rel) {
            so_far += 1;
        }
    }
    while out.len() < cutoffs.len() {
        out.push(f(cutoffs[out.len()], so_far));
    }
    out
}

/// `P_k` (m_P.c): relevant in the first `k` over `k`.
pub fn precision(r: &Ranked, cutoffs: &[i64]) -> Vec<f64> {
    at_cutoffs(r, cutoffs, |g| r.relevant(g), |k, n| n as f64 / k as f64)
}

/// `recall_k` (m_recall.c): relevant in the first `k` over the relevant; 0 without relevant.
pub fn recall(r: &Ranked, cutoffs: &[i64]) -> Vec<f64> {
    if r.num_rel == 0 {
        return vec![0.0; cutoffs.len()];
    }
    at_cutoffs(
        r,
        cutoffs,
        |g| r.relevant(g),
        |_, n| n as f64 / r.num_rel as f64,
    )
}

/// `relative_P_k` (m_rel_P.c): relevant in the first `k` over `min(k, relevant)`.
pub fn relative_precision(r: &Ranked, cutoffs: &[i64]) -> Vec<f64> {
    if r.num_rel == 0 {
        return vec![0.0; cutoffs.len()];
    }
    at_cutoffs(
        r,
        cutoffs,
        |g| r.relevant(g),
        |k, n| n as f64 / k.min(r.num_rel as i64) as f64,
    )
}

/// `success_k` (m_success.c): 1 when a relevant document is in the first `k`.
pub fn success(r: &Ranked, cutoffs: &[i64]) -> Vec<f64> {
    at_cutoffs(
        r,
        cutoffs,
        |g| r.relevant(g),
        |_, n| if n > 0 { 1.0 } else { 0.0 },
    )
}

/// `unj_k` (m_unjudged.c): documents in the first `k` without a judgement, over `k`.
pub fn unjudged(r: &Ranked, cutoffs: &[i64]) -> Vec<f64> {
    at_cutoffs(
        r,
        cutoffs,
        |g| g == NONPOOL || g == UNJUDGED,
        |k, n| n as f64 / k as f64,
    )
}

/// `map_cut_k` (m_map_cut.c): average precision of the first `k`, over all the relevant.
pub fn map_cut(r: &Ranked, cutoffs: &[i64]) -> Vec<f64> {
    let mut out = Vec::with_capacity(cutoffs.len());
    if r.num_rel == 0 {
        return vec![0.0; cutoffs.len()];
    }
    let (mut found, mut sum) = (0u64, 0.0);
    for (i, &rel) in r.rels.iter().enumerate() {
        while out.len() < cutoffs.len() && i as i64 == cutoffs[out.len()] {
            out.push(sum / r.num_rel as f64);
        }
        if out.len() == cutoffs.len() {
            break;
        }
        if r.relevant(rel) {
            found += 1;
            sum += found as f64 / (i + 1) as f64;
        }
    }
    while out.len() < cutoffs.len() {
        out.push(sum / r.num_rel as f64);
    }
    out
}

/// Average precision without its division (the sum of precisions at each relevant document)
/// and the relevant documents found.
fn ap_sum(r: &Ranked) -> (f64, u64) {
    let (mut found, mut sum) = (0u64, 0.0);
    for (i, &rel) in r.rels.iter().enumerate() {
        if r.relevant(rel) {
            found += 1;
            sum += found as f64 / (i + 1) as f64;
        }
    }
    (sum, found)
}

/// `map` (m_map.c): average precision, over all the relevant.
pub fn average_precision(r: &Ranked) -> f64 {
    match ap_sum(r) {
        (_, 0) => 0.0,
        (sum, _) => sum / r.num_rel as f64,
    }
}

/// `gm_map` (m_gm_map.c) per query: `ln(max(AP, 0.00001))`; its summary is `exp` of the mean.
pub fn log_average_precision(r: &Ranked) -> f64 {
    average_precision(r).max(MIN_GEO_MEAN).ln()
}

/// `Rprec` (m_Rprec.c): precision at R, the number of relevant.
pub fn r_precision(r: &Ranked) -> f64 {
    let n = r.num_ret().min(r.num_rel as usize);
    if n == 0 {
        return 0.0;
    }
    let found = r.rels[..n].iter().filter(|&&g| r.relevant(g)).count();
    found as f64 / r.num_rel as f64
}

/// `bpref` (m_bpref.c): per relevant retrieved document, 1 minus the share of the first R
/// judged non-relevant documents ranked above it; over R.
pub fn bpref(r: &Ranked) -> f64 {
    let num_nonrel = r.num_nonrel();
    let rel = r.num_rel;
    let (mut nonrel_so_far, mut sum) = (0u64, 0.0);
    for &g in &r.rels {
        if g == NONPOOL || g == UNJUDGED {
            continue;
        }
        if g >= 0 && g < r.level {
            nonrel_so_far += 1;
        } else if nonrel_so_far > 0 {
            sum += 1.0 - nonrel_so_far.min(rel) as f64 / num_nonrel.min(rel) as f64;
        } else {
            sum += 1.0;
        }
    }
    if rel > 0 {
        sum / rel as f64
    } else {
        sum
    }
}

/// `gm_bpref` (m_gm_bpref.c) per query: `ln(max(bpref, 0.00001))`.
pub fn log_bpref(r: &Ranked) -> f64 {
    bpref(r).max(MIN_GEO_MEAN).ln()
}

/// `recip_rank` (m_recip_rank.c): 1 / the rank of the first relevant document, 0 without one.
pub fn reciprocal_rank(r: &Ranked) -> f64 {
    r.rels
        .iter()
        .position(|&g| r.relevant(g))
        .map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

/// Interpolated precision at each of `rel_counts` relevant documents found (ascending), the
/// walk that `iprec_at_recall` and `11pt_avg` share.
fn interpolated(r: &Ranked, rel_counts: &[i64]) -> Vec<f64> {
    let mut out = vec![0.0; rel_counts.len()];
    let num_rel_ret = r.num_rel_ret as i64;
    let mut cut = rel_counts.len() as i64 - 1;
    while cut >= 0 && rel_counts[cut as usize] > num_rel_ret {
        cut -= 1;
    }
    let mut int_precis = num_rel_ret as f64 / r.num_ret() as f64;
    let mut found = num_rel_ret;
    let mut i = r.num_ret();
    while i > 0 && found > 0 {
        let precis = found as f64 / i as f64;
        if int_precis < precis {
            int_precis = precis;
        }
        if r.relevant(r.rels[i - 1]) {
            while cut >= 0 && found == rel_counts[cut as usize] {
                out[cut as usize] = int_precis;
                cut -= 1;
            }
            found -= 1;
        }
        i -= 1;
    }
    while cut >= 0 {
        out[cut as usize] = int_precis;
        cut -= 1;
    }
    out
}

/// `iprec_at_recall_x` (m_iprec_at_recall.c): the highest precision at any rank where recall
/// is at least `x` (each `x` rounded to a number of relevant documents).
pub fn iprec_at_recall(r: &Ranked, recalls: &[f64]) -> Vec<f64> {
    let counts: Vec<i64> = recalls
        .iter()
        .map(|&x| (x * r.num_rel as f64).round() as i64)
        .collect();
    interpolated(r, &counts)
}

/// `11pt_avg` (m_11pt_avg.c): the mean of [`iprec_at_recall`] over `recalls`.
pub fn eleven_point_average(r: &Ranked, recalls: &[f64]) -> f64 {
    let values = iprec_at_recall(r, recalls);
    values.iter().sum::<f64>() / recalls.len() as f64
}

/// `Rprec_mult_x` (m_Rprec_mult.c): precision at `x` × R documents.
pub fn r_precision_mult(r: &Ranked, multiples: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; multiples.len()];
    let cutoffs: Vec<i64> = multiples
        .iter()
        .map(|&x| (x * r.num_rel as f64 + 0.9) as i64)
        .collect();
    let num_ret = r.num_ret() as i64;
    let mut cut = cutoffs.len() as i64 - 1;
    while cut >= 0 && cutoffs[cut as usize] > num_ret {
        out[cut as usize] = r.num_rel_ret as f64 / cutoffs[cut as usize] as f64;
        cut -= 1;
    }
    let mut found = r.num_rel_ret;
    let mut i = r.num_ret();
    while i > 0 && found > 0 {
        let precis = found as f64 / i as f64;
        while cut >= 0 && i as i64 == cutoffs[cut as usize] {
            out[cut as usize] = precis;
            cut -= 1;
        }
        if r.relevant(r.rels[i - 1]) {
            found -= 1;
        }
        i -= 1;
    }
    out
}

/// `infAP` (m_infap.c): inferred average precision, for a sampled pool.
pub fn inferred_ap(r: &Ranked) -> f64 {
    let (mut nonrel, mut rel, mut unjudged) = (0u64, 0u64, 0u64);
    let mut sum = 0.0;
    for (j, &g) in r.rels.iter().enumerate() {
        if g == NONPOOL {
            continue;
        }
        if g == UNJUDGED {
            unjudged += 1;
            continue;
        }
        if g >= 0 && g < r.level {
            nonrel += 1;
        } else {
            rel += 1;
            if j == 0 {
                sum += 1.0;
            } else {
                let fj = j as f64;
                let above = (rel - 1 + nonrel + unjudged) as f64;
                sum += 1.0 / (fj + 1.0)
                    + (fj / (fj + 1.0))
                        * (above / fj)
                        * (((rel - 1) as f64 + INFAP_EPSILON)
                            / ((rel - 1 + nonrel) as f64 + 2.0 * INFAP_EPSILON));
            }
        }
    }
    if r.num_rel > 0 {
        sum / r.num_rel as f64
    } else {
        sum
    }
}

/// `utility` (m_utility.c): `a·relret + b·nonrelret + c·relnotret + d·nonrelnotret`, with the
/// collection size `num_docs` (`-N`).
pub fn utility(r: &Ranked, coefficients: &[f64; 4], num_docs: i64) -> f64 {
    let (rel_ret, ret, rel) = (r.num_rel_ret as f64, r.num_ret() as f64, r.num_rel as f64);
    coefficients[0] * rel_ret
        + coefficients[1] * (ret - rel_ret)
        + coefficients[2] * (rel - rel_ret)
        + coefficients[3] * (num_docs as f64 + rel_ret - ret - rel)
}

/// `binG` (m_binG.c): binary gain discounted by `log2` of the non-relevant seen so far + 2.
pub fn bin_g(r: &Ranked) -> f64 {
    let (mut found, mut sum) = (0i64, 0.0);
    for (i, &g) in r.rels.iter().enumerate() {
        if r.relevant(g) {
            found += 1;
            sum += 1.0 / log2_of((3 + i as i64 - found) as usize);
        }
    }
    if found > 0 {
        sum / r.num_rel as f64
    } else {
        0.0
    }
}

/// The gain of each grade (gain_init.c's `setup_gains`): the grade itself unless the measure's
/// parameters map it (`ndcg.1=3,2=9`), with the number of judged documents at it, in
/// ascending order of gain.
#[derive(Debug, Clone)]
pub struct Gains {
    /// `(grade, gain, documents at the grade)`, ascending by gain.
    levels: Vec<(i64, f64, u64)>,
    /// The gain of grades -2 to 61 (index: grade + 2), looked up once per document.
    table: [f64; 64],
}

impl Gains {
    /// The gains of `r`'s grades with `pairs` (`name=value`, names that are not integers are
    /// other parameters, e.g. rbp's `p`).
    pub fn new(r: &Ranked, pairs: &[(String, f64)]) -> Gains {
        let mut levels: Vec<(i64, f64, u64)> = pairs
            .iter()
            .filter(|(name, _)| valid_int(name))
            .map(|(name, value)| (atol(name.as_bytes()), *value, 0))
            .collect();
        for i in 0..r.num_rel_levels() {
            let n = r.rel_levels[i];
            match levels.iter_mut().find(|l| l.0 == i as i64) {
                Some(l) => l.2 = n,
                None => levels.push((i as i64, i as f64, n)),
            }
        }
        // trec_eval compares gains by the integer part of their difference: a stable insertion
        // sort with that comparison keeps its order (gains less than 1 apart stay in place).
        for i in 1..levels.len() {
            let mut j = i;
            while j > 0 && ((levels[j - 1].1 - levels[j].1) as i32) > 0 {
                levels.swap(j - 1, j);
                j -= 1;
            }
        }
        Gains::from_levels(levels)
    }

    fn from_levels(levels: Vec<(i64, f64, u64)>) -> Gains {
        let mut table = [0.0; 64];
        // The first level of a grade is its gain.
        for l in levels.iter().rev() {
            if let Some(slot) = usize::try_from(l.0.wrapping_add(2))
                .ok()
                .and_then(|i| table.get_mut(i))
            {
                *slot = l.1;
            }
        }
        Gains { levels, table }
    }

    /// `(grade, gain, documents at the grade)`, ascending by gain.
    pub fn levels(&self) -> &[(i64, f64, u64)] {
        &self.levels
    }

    /// The gain of a grade; 0 for a grade not listed.
    #[inline]
    pub fn gain(&self, rel: i64) -> f64 {
        match usize::try_from(rel.wrapping_add(2))
            .ok()
            .and_then(|i| self.table.get(i))
        {
            Some(&g) => g,
            None => self.levels.iter().find(|l| l.0 == rel).map_or(0.0, |l| l.1),
        }
    }

    /// The gains of the ideal ranking, best first, while they are positive.
    fn ideal(&self) -> IdealGains<'_> {
        IdealGains {
            gains: self,
            level: self.levels.len() as i64 - 1,
            at_level: 0,
        }
    }
}

/// The gain at each rank of the ideal ranking (the walk of m_ndcg.c).
struct IdealGains<'a> {
    gains: &'a Gains,
    level: i64,
    at_level: u64,
}

impl IdealGains<'_> {
    fn current(&self) -> f64 {
        if self.level >= 0 {
            self.gains.levels[self.level as usize].1
        } else {
            0.0
        }
    }

    /// Moves to the next rank and gives its gain.
    fn step(&mut self) -> f64 {
        self.at_level += 1;
        while self.level >= 0 && self.at_level > self.gains.levels[self.level as usize].2 {
            self.at_level = 1;
            self.level -= 1;
        }
        self.current()
    }
}

fn valid_int(s: &str) -> bool {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// C's `atol`: leading spaces, a sign and digits; 0 when there are none.
pub fn atol(s: &[u8]) -> i64 {
    let mut i = 0;
    while i < s.len() && (s[i] as char).is_ascii_whitespace() {
        i += 1;
    }
    let negative = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let mut n: i64 = 0;
    while let Some(d) = s.get(i).filter(|b| b.is_ascii_digit()) {
        n = n.wrapping_mul(10).wrapping_add((d - b'0') as i64);
        i += 1;
    }
    if negative {
        n.wrapping_neg()
    } else {
        n
    }
}

/// `(dcg, ideal dcg)` over the whole ranking with `gains` (m_ndcg.c).
pub fn dcg(r: &Ranked, gains: &Gains) -> (f64, f64) {
    let mut ideal = gains.ideal();
    let mut ideal_gain = ideal.current();
    let (mut results_dcg, mut ideal_dcg) = (0.0, 0.0);
    let mut i = 0;
    while i < r.num_ret() && ideal_gain > 0.0 {
        let g = gains.gain(r.rels[i]);
        let discount = log2_of(i + 2);
        if g != 0.0 {
            results_dcg += g / discount;
        }
        ideal_gain = ideal.step();
        if ideal_gain > 0.0 {
            ideal_dcg += ideal_gain / discount;
        }
        i += 1;
    }
    while i < r.num_ret() {
        let g = gains.gain(r.rels[i]);
        if g != 0.0 {
            results_dcg += g / log2_of(i + 2);
        }
        i += 1;
    }
    while ideal_gain > 0.0 {
        ideal_gain = ideal.step();
        if ideal_gain > 0.0 {
            ideal_dcg += ideal_gain / log2_of(i + 2);
        }
        i += 1;
    }
    (results_dcg, ideal_dcg)
}

/// `ndcg` (m_ndcg.c): DCG over the ideal DCG, with `gains`; 0 when the ideal is 0.
pub fn ndcg(r: &Ranked, gains: &Gains) -> f64 {
    match dcg(r, gains) {
        (d, ideal) if ideal > 0.0 => d / ideal,
        _ => 0.0,
    }
}

/// `ndcg_rel` (m_ndcg_rel.c): nDCG averaged over the ranks of the relevant documents.
pub fn ndcg_rel(r: &Ranked, gains: &Gains) -> f64 {
    let mut ideal = gains.ideal();
    let mut ideal_gain = ideal.current();
    let (mut results_dcg, mut ideal_dcg, mut sum) = (0.0, 0.0, 0.0);
    let (mut num_rel_ret, mut num_rel) = (0i64, 0i64);
    let mut i = 0;
    while i < r.num_ret() && ideal_gain > 0.0 {
        let g = gains.gain(r.rels[i]);
        let discount = log2_of(i + 2);
        if g != 0.0 {
            results_dcg += g / discount;
        }
        ideal_gain = ideal.step();
        if ideal_gain > 0.0 {
            num_rel += 1;
            ideal_dcg += ideal_gain / discount;
        }
        if g > 0.0 {
            sum += results_dcg / ideal_dcg;
            num_rel_ret += 1;
        }
        i += 1;
    }
    while i < r.num_ret() {
        let g = gains.gain(r.rels[i]);
        if g != 0.0 {
            results_dcg += g / log2_of(i + 2);
        }
        if g > 0.0 {
            sum += results_dcg / ideal_dcg;
            num_rel_ret += 1;
        }
        i += 1;
    }
    while ideal_gain > 0.0 {
        ideal_gain = ideal.step();
        if ideal_gain > 0.0 {
            num_rel += 1;
            ideal_dcg += ideal_gain / log2_of(i + 2);
        }
        i += 1;
    }
    sum += (num_rel - num_rel_ret) as f64 * results_dcg / ideal_dcg;
    if sum > 0.0 {
        sum / num_rel as f64
    } else {
        0.0
    }
}

/// `Rndcg` (m_Rndcg.c): nDCG averaged over the ranks where the ideal gain changes.
pub fn r_ndcg(r: &Ranked, gains: &Gains) -> f64 {
    if r.num_rel == 0 {
        return 0.0;
    }
    let mut ideal = gains.ideal();
    let mut ideal_gain = ideal.current();
    let mut old_ideal_gain = ideal_gain;
    let (mut results_dcg, mut ideal_dcg, mut sum) = (0.0, 0.0, 0.0);
    let mut changes = 0i64;
    let mut i = 0;
    while i < r.num_ret() && ideal_gain > 0.0 {
        let g = gains.gain(r.rels[i]);
        ideal_gain = ideal.step();
        if old_ideal_gain != ideal_gain {
            if ideal_dcg > 0.0 {
                sum += results_dcg / ideal_dcg;
                changes += 1;
            }
            old_ideal_gain = ideal_gain;
        }
        let discount = log2_of(i + 2);
        if g != 0.0 {
            results_dcg += g / discount;
        }
        if ideal_gain > 0.0 {
            ideal_dcg += ideal_gain / discount;
        }
        i += 1;
    }
    if i < r.num_ret() {
        while i < r.num_ret() {
            let g = gains.gain(r.rels[i]);
            if g != 0.0 {
                results_dcg += g / log2_of(i + 2);
            }
            i += 1;
        }
        if ideal_dcg > 0.0 {
            sum += results_dcg / ideal_dcg;
            changes += 1;
        }
    }
    while ideal_gain > 0.0 {
        ideal_gain = ideal.step();
        if old_ideal_gain != ideal_gain {
            if ideal_dcg > 0.0 {
                sum += results_dcg / ideal_dcg;
                changes += 1;
            }
            old_ideal_gain = ideal_gain;
        }
        if ideal_gain > 0.0 {
            ideal_dcg += ideal_gain / log2_of(i + 2);
        }
        i += 1;
    }
    sum / changes as f64
}

/// `G` (m_G.c): gain discounted by the cost of the documents seen so far, over the ideal.
pub fn g_measure(r: &Ranked, gains: &Gains) -> f64 {
    let mut ideal = gains.ideal();
    let mut ideal_gain = ideal.current();
    let (mut results_g, mut sum_results, mut sum_ideal, mut sum_cost) = (0.0, 0.0, 0.0, 0.0);
    let min_cost = 1.0;
    let mut i = 0;
    while i < r.num_ret() && ideal_gain > 0.0 {
        let g = gains.gain(r.rels[i]);
        sum_results += g;
        ideal_gain = ideal.step();
        if ideal_gain > 0.0 {
            sum_ideal += ideal_gain;
        }
        sum_cost += if ideal_gain >= min_cost {
            ideal_gain
        } else {
            min_cost
        };
        if g != 0.0 {
            results_g += g / (2.0 + sum_cost - sum_results).log2();
        }
        i += 1;
    }
    while i < r.num_ret() {
        let g = gains.gain(r.rels[i]);
        sum_results += g;
        sum_cost += min_cost;
        if g != 0.0 {
            results_g += g / (2.0 + sum_cost - sum_results).log2();
        }
        i += 1;
    }
    while ideal_gain > 0.0 {
        ideal_gain = ideal.step();
        if ideal_gain > 0.0 {
            sum_ideal += ideal_gain;
        }
    }
    if sum_ideal > 0.0 {
        results_g / sum_ideal
    } else {
        0.0
    }
}

/// `ndcg_cut_k` (m_ndcg_cut.c): nDCG at `k` with each grade as its own gain (no parameters).
pub fn ndcg_cut(r: &Ranked, cutoffs: &[i64]) -> Vec<f64> {
    let mut out = Vec::with_capacity(cutoffs.len());
    let mut sum = 0.0;
    for (i, &g) in r.rels.iter().enumerate() {
        if i as i64 == cutoffs[out.len()] {
            out.push(sum);
            if out.len() == cutoffs.len() {
                break;
            }
        }
        if g > 0 {
            sum += g as f64 / log2_of(i + 2);
        }
    }
    while out.len() < cutoffs.len() {
        out.push(sum);
    }
    // The ideal: the judged grades from the highest down (grade 0 ends it).
    let mut cut = 0;
    let mut level = r.num_rel_levels() as i64 - 1;
    let mut count = 0u64;
    let mut ideal = 0.0;
    let mut i: i64 = 0;
    loop {
        count += 1;
        while level > 0 && count > r.rel_levels[level as usize] {
            level -= 1;
            count = 1;
        }
        if level == 0 {
            break;
        }
        if i == cutoffs[cut] {
            if ideal > 0.0 {
                out[cut] /= ideal;
            }
            cut += 1;
            if cut == cutoffs.len() {
                break;
            }
        }
        ideal += level as f64 / log2_of(i as usize + 2);
        i += 1;
    }
    while cut < cutoffs.len() {
        if ideal > 0.0 {
            out[cut] /= ideal;
        }
        cut += 1;
    }
    out
}

/// `set_P` (m_set_P.c): relevant retrieved over retrieved.
pub fn set_precision(r: &Ranked) -> f64 {
    if r.num_ret() > 0 {
        r.num_rel_ret as f64 / r.num_ret() as f64
    } else {
        0.0
    }
}

/// `set_relative_P` (m_set_rel_P.c): relevant retrieved over `min(retrieved, relevant)`.
pub fn set_relative_precision(r: &Ranked) -> f64 {
    if r.num_ret() > 0 && r.num_rel > 0 {
        r.num_rel_ret as f64 / (r.num_ret() as u64).min(r.num_rel) as f64
    } else {
        0.0
    }
}

/// `set_recall` (m_set_recall.c): relevant retrieved over relevant.
pub fn set_recall(r: &Ranked) -> f64 {
    if r.num_rel > 0 {
        r.num_rel_ret as f64 / r.num_rel as f64
    } else {
        0.0
    }
}

/// `set_map` (m_set_map.c): set precision × set recall.
pub fn set_map(r: &Ranked) -> f64 {
    if r.num_ret() > 0 && r.num_rel > 0 {
        (r.num_rel_ret as f64 * r.num_rel_ret as f64) / (r.num_ret() as f64 * r.num_rel as f64)
    } else {
        0.0
    }
}

/// `set_F` (m_set_F.c): `(β + 1)·P·R / (β·P + R)` of the retrieved set (β is the parameter,
/// 1 by default: trec_eval weighs by β, not β²).
pub fn set_f(r: &Ranked, beta: f64) -> f64 {
    if r.num_rel_ret == 0 {
        return 0.0;
    }
    let p = r.num_rel_ret as f64 / r.num_ret() as f64;
    let rec = r.num_rel_ret as f64 / r.num_rel as f64;
    (beta + 1.0) * p * rec / (beta * p + rec)
}

/// `num_nonrel_judged_ret` (m_num_nonrel_judged_ret.c): judged non-relevant retrieved.
pub fn num_nonrel_judged_ret(r: &Ranked) -> f64 {
    r.num_ret() as f64 - r.num_nonpool as f64 - r.num_unjudged as f64 - r.num_rel_ret as f64
}

/// `yaap` (m_yaap.c), Robertson's "yet another average precision":
/// `ln((1 + s) / (1 + R - s))`, `s` the sum of the precisions at each relevant document
/// retrieved and R the number of relevant documents.
pub fn yaap(r: &Ranked) -> f64 {
    let (sum, _) = ap_sum(r);
    ((1.0 + sum) / (1.0 + r.num_rel as f64 - sum)).ln()
}

/// The persistence `p` of `rbp` and `rbp_resid` (parameter `p=…`, 0.9 by default).
pub fn rbp_persistence(pairs: &[(String, f64)]) -> f64 {
    pairs
        .iter()
        .rev()
        .find(|(name, _)| name == "p")
        .map_or(0.9, |(_, v)| *v)
}

/// `rbp` (m_rbp.c): rank-biased precision `(1 - p) Σ gain·p^i`, gains rescaled to [0, 1] when
/// some lie outside it.
pub fn rbp(r: &Ranked, gains: &Gains, p: f64) -> f64 {
    let mut levels = gains.levels.clone();
    // trec_eval starts the minimum and maximum uninitialised; with the gains of a qrels they
    // come out as those of 0 and the gains, which is what is used here.
    let (mut min, mut max) = (0.0f64, 0.0f64);
    for l in &levels {
        min = min.min(l.1);
        max = max.max(l.1);
    }
    if min < 0.0 || max > 1.0 {
        for l in &mut levels {
            l.1 = (l.1 - min) / (max - min);
        }
    }
    let gains = Gains::from_levels(levels);
    let (mut sum, mut cur) = (0.0, 1.0);
    for &g in &r.rels {
        let gain = gains.gain(g);
        if gain != 0.0 {
            sum += gain * cur;
        }
        cur *= p;
    }
    (1.0 - p) * sum
}

/// `rbp_resid` (m_rbp_resid.c): the most rbp could rise if every unjudged document were
/// relevant (0 without unjudged documents).
pub fn rbp_resid(r: &Ranked, p: f64) -> f64 {
    let (mut unjudged, mut sum, mut cur) = (0u64, 0.0, 1.0);
    for &g in &r.rels {
        if g < 0 {
            unjudged += 1;
            sum += cur;
        }
        cur *= p;
    }
    if unjudged > 0 {
        cur + (1.0 - p) * sum
    } else {
        0.0
    }
}

/// `relstring` (m_relstring.c): the grades of the first `len` documents as characters: the
/// digit, `>` above 9, `-` not in the pool, `.` pooled but unjudged, `<` otherwise.
pub fn relstring(r: &Ranked, len: i64) -> String {
    let n = (len.max(0) as usize).min(r.num_ret());
    r.rels[..n]
        .iter()
        .map(|&g| match g {
            10.. => '>',
            0..=9 => (b'0' + g as u8) as char,
            NONPOOL => '-',
            UNJUDGED => '.',
            _ => '<',
        })
        .collect()
}
