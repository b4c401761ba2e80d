//! trec_eval's preference judgements (`-R prefs`, `-R qrels_prefs`) and its 14 `prefs_*`
//! measures.
//!
//! A preference file says, per query, which documents a user prefers to which: lines
//! `qid jg jsg docno level` put the documents of one judgement sub-group (`jsg`) of a
//! judgement group (`jg`, one user's view) in order of their levels, every pair with different
//! levels being one preference (`-R qrels_prefs` reads a qrels file the same way, its
//! iteration column as the group, one sub-group each). A level of 0 means non-relevant.
//! Within a group, preferences of different sub-groups combine transitively.
//!
//! [`PrefCounts::new`] joins a query's preferences with its ranking as trec_eval's
//! form_prefs_counts.c does, and the measures are functions of the counts it keeps: a
//! preference `A > B` is fulfilled when A ranks above B, "retrieved" when both were retrieved,
//! "implied" when only one was (fulfilled when it is A), "not occurring" when neither was.

/// One line of a preference file: judgement group, sub-group, document and level.
#[derive(Debug, Clone, Copy)]
pub struct PrefLine<'a> {
    /// The judgement group (one user's judgements).
    pub jg: &'a [u8],
    /// The sub-group within it whose documents are ordered by level.
    pub jsg: &'a [u8],
    /// The document.
    pub docno: &'a [u8],
    /// Its level: higher is preferred, 0 is non-relevant.
    pub level: f64,
}

/// One query's preference lines, in file order.
pub type PrefQuery<'a> = (&'a [u8], Vec<PrefLine<'a>>);

/// The fields of a line, separated by what C's `isspace` calls space.
pub(super) fn fields(line: &[u8]) -> Vec<&[u8]> {
    line.split(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
        .filter(|f| !f.is_empty())
        .collect()
}

/// Reads a preference file: `qid jg jsg docno level` lines (`sub_groups`) or qrels lines
/// `qid jg docno level` (`-R qrels_prefs`, one sub-group per group), each level read by
/// `number` (trec_eval's `atof`); lines starting with `#` are comments. Queries come sorted
/// by id. `Err(n)` names the `n`th line read (comments left out, as trec_eval counts) that
/// does not have exactly the fields it needs.
pub fn read_prefs(
    text: &[u8],
    sub_groups: bool,
    number: impl Fn(&[u8]) -> f64,
) -> std::result::Result<Vec<PrefQuery<'_>>, usize> {
    let want = if sub_groups { 5 } else { 4 };
    let mut lines: Vec<(&[u8], PrefLine<'_>)> = Vec::new();
    for line in text
        .strip_suffix(b"\n")
        .unwrap_or(text)
        .split(|&b| b == b'\n')
    {
        if line.first() == Some(&b'#') {
            continue;
        }
        let f = fields(line);
        if f.len() != want {
            return Err(lines.len() + 1);
        }
        let (jsg, docno, level): (&[u8], _, _) = if sub_groups {
            (f[2], f[3], f[4])
        } else {
            (b"0", f[2], f[3])
        };
        // -0 and 0 are one level, as C compares them.
        let level = number(level) + 0.0;
        lines.push((
            f[0],
            PrefLine {
                jg: f[1],
                jsg,
                docno,
                level,
            },
        ));
    }
    lines.sort_by(|a, b| a.0.cmp(b.0).then(a.1.docno.cmp(b.1.docno)));
    let mut out: Vec<PrefQuery<'_>> = Vec::new();
    for (qid, line) in lines {
        match out.last_mut() {
            Some((q, prefs)) if *q == qid => prefs.push(line),
            _ => out.push((qid, vec![line])),
        }
    }
    Ok(out)
}

/// A preference line with its document's id, as the groups are formed from it.
struct Entry<'a> {
    jg: &'a [u8],
    jsg: &'a [u8],
    level: f64,
    id: usize,
    docno: &'a [u8],
}

/// How one judgement group holds its preferences.
#[derive(Debug, Clone)]
enum Form {
    /// One sub-group: classes of documents of equal level, highest first, each with its
    /// documents' ids ascending; every document is preferred to those of the later classes.
    Classes {
        classes: Vec<(f64, Vec<usize>)>,
        last: usize,
    },
    /// `last` is where the last class's ids start in [`PrefCounts::pool`].
    /// Several sub-groups: `prefers[i * n + j]` when `i` is preferred to `j` (transitively),
    /// with the level of each document (-1 for one this group does not judge).
    Array {
        prefers: Vec<bool>,
        levels: Vec<f64>,
    },
}

/// One judgement group's counts (trec_eval's `JG`).
#[derive(Debug, Clone, Default)]
struct Group {
    fulfilled_ret: i64,
    possible_ret: i64,
    fulfilled_imp: i64,
    possible_imp: i64,
    possible_notoccur: i64,
    num_rel: i64,
    num_rel_ret: i64,
    num_nonrel: i64,
    num_nonrel_ret: i64,
    form: Option<Form>,
}

/// A query's preferences joined with its ranking (trec_eval's `RESULTS_PREFS`).
///
/// Each judged document has an id: the retrieved ones `0..judged_ret` in rank order, the
/// others after them in docno order.
#[derive(Debug, Clone)]
pub struct PrefCounts {
    judged: usize,
    judged_ret: usize,
    groups: Vec<Group>,
    /// `counts[i * judged + j]`: how many groups prefer `i` to `j` (16 bits, as trec_eval's).
    counts: Vec<u16>,
    /// The ids of the classes of every one-sub-group group, one after the other: trec_eval's
    /// pool, which `prefs_avgjg_Rnonrel` reads past a last class shorter than R.
    pool: Vec<usize>,
}

impl PrefCounts {
    /// Joins `prefs` (one query's lines) with `docs` (its retrieved docnos and scores): ranked
    /// by score, ties by docno ascending (form_prefs_counts.c's order, unlike form_res_rels.c's),
    /// at most `max_docs`. The error is trec_eval's message.
    pub fn new(
        prefs: &[PrefLine<'_>],
        docs: &[(&[u8], f64)],
        max_docs: usize,
    ) -> std::result::Result<PrefCounts, String> {
        let mut ranked: Vec<(&[u8], f64)> = docs.iter().map(|&(d, s)| (d, s + 0.0)).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        ranked.truncate(max_docs);
        let mut by_docno: Vec<&[u8]> = ranked.iter().map(|d| d.0).collect();
        by_docno.sort_unstable();
        if let Some(w) = by_docno.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!(
                "trec_eval.form_prefs_counts: duplicate docs {}",
                String::from_utf8_lossy(w[1])
            ));
        }
        let mut judged_docnos: Vec<&[u8]> = prefs.iter().map(|p| p.docno).collect();
        judged_docnos.sort_unstable();
        judged_docnos.dedup();
        // Ids: retrieved judged documents by rank, then the rest by docno.
        let mut ids: std::collections::HashMap<&[u8], usize> =
            std::collections::HashMap::with_capacity(judged_docnos.len());
        for (docno, _) in &ranked {
            if judged_docnos.binary_search(docno).is_ok() {
                let next = ids.len();
                ids.insert(docno, next);
            }
        }
        let judged_ret = ids.len();
        for docno in &judged_docnos {
            let next = ids.len();
            ids.entry(docno).or_insert(next);
        }
        let judged = ids.len();
        let mut entries: Vec<Entry<'_>> = prefs
            .iter()
            .map(|p| Entry {
                jg: p.jg,
                jsg: p.jsg,
                level: p.level,
                id: ids[p.docno],
                docno: p.docno,
            })
            .collect();
        entries.sort_by(|a, b| {
            a.jg.cmp(b.jg)
                .then(a.jsg.cmp(b.jsg))
                .then(b.level.total_cmp(&a.level))
                .then(a.id.cmp(&b.id))
        });
        let mut out = PrefCounts {
            judged,
            judged_ret,
            groups: Vec::new(),
            counts: vec![0; judged * judged],
            pool: Vec::new(),
        };
        let mut start = 0;
        while start < entries.len() {
            let jg = entries[start].jg;
            let end = start
                + entries[start..]
                    .iter()
                    .position(|e| e.jg != jg)
                    .unwrap_or(entries.len() - start);
            let group = &entries[start..end];
            let sub_groups = 1 + group.windows(2).filter(|w| w[0].jsg != w[1].jsg).count();
            let g = if sub_groups > 1 {
                out.array_group(group)?
            } else {
                out.class_group(group)?
            };
            out.groups.push(g);
            start = end;
        }
        Ok(out)
    }

    /// A group of one sub-group (form_jg_ec, add_ec_pref_to_jg).
    fn class_group(&mut self, entries: &[Entry<'_>]) -> std::result::Result<Group, String> {
        let mut classes: Vec<(f64, Vec<usize>)> = Vec::new();
        for e in entries {
            match classes.last_mut() {
                // C's `!=`: a NaN level starts a class of its own.
                Some((level, ids)) if !(*level != e.level) => ids.push(e.id),
                _ => classes.push((e.level, vec![e.id])),
            }
        }
        let last = self.pool.len() + entries.len() - classes.last().map_or(0, |c| c.1.len());
        self.pool.extend(entries.iter().map(|e| e.id));
        let (n, jr) = (self.judged, self.judged_ret);
        let mut g = Group::default();
        for (c1, (level, ids1)) in classes.iter().enumerate() {
            let ret = ids1.iter().take_while(|&&id| id < jr).count() as i64;
            if *level > 0.0 {
                g.num_rel_ret += ret;
                g.num_rel += ids1.len() as i64;
            } else {
                g.num_nonrel_ret += ret;
                g.num_nonrel += ids1.len() as i64;
            }
            for (_, ids2) in &classes[c1 + 1..] {
                for &p1 in ids1 {
                    for &p2 in ids2 {
                        let c = &mut self.counts[p1 * n + p2];
                        *c = c.wrapping_add(1);
                        if p1 == p2 {
                            return Err(format!(
                                "trec_eval.form_prefs_counts: Internal docid {p1} occurs with \
                                 different rel_level in same jsg\n"
                            ));
                        }
                        if p1 < p2 {
                            if p2 < jr {
                                g.fulfilled_ret += 1;
                            } else if p1 < jr {
                                g.fulfilled_imp += 1;
                            } else {
                                g.possible_notoccur += 1;
                            }
                        } else if p1 < jr {
                            g.possible_ret += 1;
                        } else if p2 < jr {
                            g.possible_imp += 1;
                        } else {
                            g.possible_notoccur += 1;
                        }
                    }
                }
            }
        }
        g.possible_ret += g.fulfilled_ret;
        g.possible_imp += g.fulfilled_imp;
        g.form = Some(Form::Classes { classes, last });
        Ok(g)
    }

    /// A group of several sub-groups (form_jg_pa, add_transitives, add_pa_pref_to_jg).
    fn array_group(&mut self, entries: &[Entry<'_>]) -> std::result::Result<Group, String> {
        let (n, jr) = (self.judged, self.judged_ret);
        let mut prefers = vec![false; n * n];
        let mut levels = vec![-1.0; n];
        for (i, e) in entries.iter().enumerate() {
            let known = levels[e.id];
            if (known > 0.0 && e.level == 0.0) || (known == 0.0 && e.level > 0.0) {
                return Err(format!(
                    "trec_eval.form_prefs_counts: doc '{}' has both 0 and non-0 rel_level \
                     assigned\n",
                    String::from_utf8_lossy(e.docno)
                ));
            }
            levels[e.id] = e.level;
            let mut j = i + 1;
            while j < entries.len() && entries[j].jsg == e.jsg && entries[j].level == e.level {
                j += 1;
            }
            while j < entries.len() && entries[j].jsg == e.jsg {
                prefers[e.id * n + entries[j].id] = true;
                j += 1;
            }
        }
        // The transitive closure (trec_eval multiplies the matrix by itself until it stops
        // changing, which reaches the same closure).
        for k in 0..n {
            for i in 0..n {
                if i != k && prefers[i * n + k] {
                    for j in 0..n {
                        if prefers[k * n + j] {
                            prefers[i * n + j] = true;
                        }
                    }
                }
            }
        }
        for i in 0..n {
            prefers[i * n + i] = false;
        }
        for i in 0..n {
            for j in 0..n {
                if prefers[i * n + j] && prefers[j * n + i] {
                    return Err(format!(
                        "trec_eval.form_prefs_counts: Pref inconsistency found\n      \
                         internal rank {i} and internal rank {j} are conflicted\n"
                    ));
                }
            }
        }
        let mut g = Group::default();
        for (i, &level) in levels.iter().enumerate() {
            let ret = i < jr;
            if level > 0.0 {
                g.num_rel += 1;
                g.num_rel_ret += i64::from(ret);
            } else if level == 0.0 {
                g.num_nonrel += 1;
                g.num_nonrel_ret += i64::from(ret);
            }
        }
        for i in 0..n {
            for j in 0..n {
                if i == j || !prefers[i * n + j] {
                    continue;
                }
                let c = &mut self.counts[i * n + j];
                *c = c.wrapping_add(1);
                match (i < jr, j < jr) {
                    (true, true) if j < i => g.possible_ret += 1,
                    (true, true) => g.fulfilled_ret += 1,
                    (true, false) => g.fulfilled_imp += 1,
                    (false, true) => g.possible_imp += 1,
                    (false, false) => g.possible_notoccur += 1,
                }
            }
        }
        g.possible_ret += g.fulfilled_ret;
        g.possible_imp += g.fulfilled_imp;
        g.form = Some(Form::Array { prefers, levels });
        Ok(g)
    }

    fn count(&self, i: usize, j: usize) -> u16 {
        self.counts[i * self.judged + j]
    }

    /// The mean over document pairs of the share of their preferences (across groups) that
    /// the ranking fulfils: pairs of retrieved documents, then (`implied`) pairs of a retrieved
    /// and an unretrieved one, then (`unretrieved`) pairs of two unretrieved documents, which
    /// count with no share. The loops and their order are trec_eval's, for the same sum.
    fn pair_mean(&self, implied: bool, unretrieved: bool) -> f64 {
        let (jr, n) = (self.judged_ret, self.judged);
        let (mut sum, mut pairs) = (0.0, 0u64);
        let mut add = |a: u16, b: u16, share: bool| {
            if a > 0 || b > 0 {
                pairs += 1;
                if share {
                    sum += f64::from(a) / (f64::from(a) + f64::from(b));
                }
            }
        };
        for i in 0..jr {
            for j in i + 1..jr {
                add(self.count(i, j), self.count(j, i), true);
            }
        }
        if implied {
            for i in 0..jr {
                for j in jr..n {
                    add(self.count(i, j), self.count(j, i), true);
                }
            }
        }
        if unretrieved {
            for i in jr..n {
                for j in i + 1..n {
                    add(self.count(i, j), self.count(j, i), false);
                }
            }
        }
        if pairs > 0 {
            sum / pairs as f64
        } else {
            0.0
        }
    }
}

/// Which preferences a measure counts: both documents retrieved (`ret`), at least one
/// (`imp`), or all of them.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scope {
    Ret,
    Imp,
    All,
}

fn fulfilled(g: &Group, scope: Scope) -> i64 {
    match scope {
        Scope::Ret => g.fulfilled_ret,
        Scope::Imp | Scope::All => g.fulfilled_ret + g.fulfilled_imp,
    }
}

fn possible(g: &Group, scope: Scope) -> i64 {
    match scope {
        Scope::Ret => g.possible_ret,
        Scope::Imp => g.possible_ret + g.possible_imp,
        Scope::All => g.possible_ret + g.possible_imp + g.possible_notoccur,
    }
}

/// `ful / poss` over all groups together, 0 without a preference.
fn simple(c: &PrefCounts, scope: Scope) -> f64 {
    let ful: i64 = c.groups.iter().map(|g| fulfilled(g, scope)).sum();
    let poss: i64 = c.groups.iter().map(|g| possible(g, scope)).sum();
    if poss > 0 {
        ful as f64 / poss as f64
    } else {
        0.0
    }
}

/// The mean over groups of each group's `ful / poss` (a group without preferences adds 0).
fn per_group(c: &PrefCounts, scope: Scope) -> f64 {
    let mut sum = 0.0;
    for g in &c.groups {
        let poss = possible(g, scope);
        if poss > 0 {
            sum += fulfilled(g, scope) as f64 / poss as f64;
        }
    }
    if sum > 0.0 {
        sum / c.groups.len() as f64
    } else {
        0.0
    }
}

/// `prefs_num_prefs_poss` (m_prefs_num_prefs_poss.c): preferences, retrieved or not.
pub fn num_prefs_poss(c: &PrefCounts) -> f64 {
    c.groups
        .iter()
        .map(|g| possible(g, Scope::All))
        .sum::<i64>() as f64
}

/// `prefs_num_prefs_ful` (m_prefs_num_prefs_ful.c): preferences fulfilled, with the implied.
pub fn num_prefs_ful(c: &PrefCounts) -> f64 {
    c.groups
        .iter()
        .map(|g| fulfilled(g, Scope::All))
        .sum::<i64>() as f64
}

/// `prefs_num_prefs_ful_ret` (m_prefs_num_prefs_ful_ret.c): preferences fulfilled between
/// two retrieved documents.
pub fn num_prefs_ful_ret(c: &PrefCounts) -> f64 {
    c.groups.iter().map(|g| g.fulfilled_ret).sum::<i64>() as f64
}

/// `prefs_simp` (m_prefs_simp.c): preferences fulfilled over preferences possible; one
/// neither of whose documents was retrieved counts as failed.
pub fn simp(c: &PrefCounts) -> f64 {
    simple(c, Scope::All)
}

/// `prefs_simp_ret` (m_prefs_simp_ret.c): [`simp`] over the pairs of retrieved documents.
pub fn simp_ret(c: &PrefCounts) -> f64 {
    simple(c, Scope::Ret)
}

/// `prefs_simp_imp` (m_prefs_simp_imp.c): [`simp`] over the pairs with a retrieved document.
pub fn simp_imp(c: &PrefCounts) -> f64 {
    simple(c, Scope::Imp)
}

/// `prefs_pair` (m_prefs_pair.c): the mean over document pairs of the share of their
/// preferences (across groups) fulfilled.
pub fn pair(c: &PrefCounts) -> f64 {
    c.pair_mean(true, true)
}

/// `prefs_pair_ret` (m_prefs_pair_ret.c): [`pair`] over the pairs of retrieved documents.
pub fn pair_ret(c: &PrefCounts) -> f64 {
    c.pair_mean(false, false)
}

/// `prefs_pair_imp` (m_prefs_pair_imp.c): [`pair`] over the pairs with a retrieved document.
pub fn pair_imp(c: &PrefCounts) -> f64 {
    c.pair_mean(true, false)
}

/// `prefs_avgjg` (m_prefs_avgjg.c): [`simp`] per judgement group, averaged over the groups.
pub fn avgjg(c: &PrefCounts) -> f64 {
    per_group(c, Scope::All)
}

/// `prefs_avgjg_ret` (m_prefs_avgjg_ret.c): [`simp_ret`] per group, averaged over the groups.
pub fn avgjg_ret(c: &PrefCounts) -> f64 {
    per_group(c, Scope::Ret)
}

/// `prefs_avgjg_imp` (m_prefs_avgjg_imp.c): [`simp_imp`] per group, averaged over the groups.
pub fn avgjg_imp(c: &PrefCounts) -> f64 {
    per_group(c, Scope::Imp)
}

/// `prefs_avgjg_Rnonrel` (m_prefs_avgjg_Rnonrel.c): [`avgjg`] as if each group judged as
/// many non-relevant documents as relevant ones (R): with fewer, the missing ones count as
/// ranked below every relevant retrieved document; with more, only the first R are kept.
pub fn avgjg_rnonrel(c: &PrefCounts) -> f64 {
    rnonrel(c, false)
}

/// `prefs_avgjg_Rnonrel_ret` (m_prefs_avgjg_Rnonrel_ret.c): [`avgjg_rnonrel`] over the
/// retrieved documents.
pub fn avgjg_rnonrel_ret(c: &PrefCounts) -> f64 {
    rnonrel(c, true)
}

fn rnonrel(c: &PrefCounts, ret_only: bool) -> f64 {
    let mut sum = 0.0;
    for g in &c.groups {
        let (r, n) = if ret_only {
            (g.num_rel_ret, g.num_nonrel_ret)
        } else {
            (g.num_rel, g.num_nonrel)
        };
        let (ful, poss) = if r >= n {
            let scope = if ret_only { Scope::Ret } else { Scope::All };
            (
                fulfilled(g, scope) + g.num_rel_ret * (r - n),
                possible(g, scope) + g.num_rel * (r - n),
            )
        } else {
            recount(g, c, ret_only)
        };
        sum += ful as f64 / poss as f64;
    }
    if sum > 0.0 {
        sum / c.groups.len() as f64
    } else {
        0.0
    }
}

/// The `recalculate` of m_prefs_avgjg_Rnonrel*.c: a group's fulfilled and possible
/// preferences keeping only its first R non-relevant documents, kept as literally as
/// trec_eval counts them: the last class is taken to be the non-relevant one (a negative
/// level sorts below it) and is paired with its own first R documents too, R documents read
/// from where the class starts even when it has fewer.
fn recount(g: &Group, c: &PrefCounts, ret_only: bool) -> (i64, i64) {
    let jr = c.judged_ret;
    let (mut ful, mut poss) = (0i64, 0i64);
    match &g.form {
        Some(Form::Classes { classes, last }) => {
            let keep = |ids: &[usize]| -> usize {
                if ret_only {
                    ids.iter().take_while(|&&id| id < jr).count()
                } else {
                    ids.len()
                }
            };
            let mut tally = |p1: usize, p2: usize| {
                if p1 < p2 && (ret_only || p1 < jr) {
                    ful += 1;
                } else {
                    poss += 1;
                }
            };
            for (c1, (_, ids1)) in classes.iter().enumerate() {
                for (_, ids2) in classes.iter().take(classes.len() - 1).skip(c1 + 1) {
                    for &p1 in &ids1[..keep(ids1)] {
                        for &p2 in &ids2[..keep(ids2)] {
                            tally(p1, p2);
                        }
                    }
                }
            }
            let r = if ret_only { g.num_rel_ret } else { g.num_rel } as usize;
            // Past the pool trec_eval reads memory it did not write; that is left out.
            let nonrel = &c.pool[*last..(*last + r).min(c.pool.len())];
            for (_, ids1) in classes {
                for &p1 in &ids1[..keep(ids1)] {
                    for &p2 in &nonrel[..keep(nonrel)] {
                        tally(p1, p2);
                    }
                }
            }
        }
        Some(Form::Array { prefers, levels }) => {
            let n = levels.len();
            let scan = if ret_only { jr } else { n };
            let mut seen = 0;
            let mut first_discarded = scan;
            for (i, &level) in levels.iter().enumerate().take(scan) {
                if level == 0.0 {
                    seen += 1;
                    if seen == g.num_rel + 1 {
                        first_discarded = i;
                        break;
                    }
                }
            }
            let dropped = |i: usize| i >= first_discarded && levels[i] == 0.0;
            let cols = if ret_only { jr } else { n };
            for i in 0..n {
                if (ret_only && i >= jr) || dropped(i) {
                    continue;
                }
                for j in 0..cols {
                    if j == i || dropped(j) || !prefers[i * n + j] {
                        continue;
                    }
                    match (i < jr, j < jr) {
                        (true, true) if j < i => poss += 1,
                        (true, _) => ful += 1,
                        (false, _) => poss += 1,
                    }
                }
            }
        }
        None => {}
    }
    (ful, ful + poss)
}
