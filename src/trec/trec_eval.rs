//! `rag-eval trec_eval`: trec_eval 10.0's command line and output, byte for byte.
//!
//! [`run`] takes trec_eval's arguments and writes what trec_eval writes: the same measures in
//! the same order, named as it names them, in its `%-22s\t%s\t%6.4f` layout, with its exit
//! codes and (for the errors that make sense here) its messages. The measures themselves are
//! the functions of [`measures`](super::measures). What differs, on purpose:
//!
//! - `-h` prints rag-eval's own summary of the options and measures (trec_eval prints its
//!   authors' text, which is not copied here); `-v` names both versions.
//! - `form_prefs_counts`' abort on preferences that contradict each other within a judgement
//!   group is an error with exit code 4 (trec_eval dumps core).
//! - `-D` is accepted; the debugging traces of trec_eval's measures are not printed.
//! - Where trec_eval reads uninitialised memory or past a buffer (two comment lines in a row in
//!   qrels, a qrels query whose grades are all negative, `rbp`'s initial minimum and maximum)
//!   the figure is the one a clean run of trec_eval gives: comment lines are skipped, `rbp`
//!   starts from 0.
//! - Queries are matched through a hash table, not trec_eval's scan of every result for every
//!   qrels query: figures and order are the same, the time is linear in the queries.

use super::blocks::{in_parallel, Block, BLOCK_BYTES};
use super::groups as g;
use super::measures::{self as m, Gains, Ranked};
use super::parse::QidMap;
use super::prefs::{self as p, PrefCounts};
use super::trec_eval_input::{
    atof, key_score, rank, read_qrels, read_results, read_run_piece, score_key, tokens,
    JudgedQuery, Other, Results, Scratch,
};
use camino::Utf8Path;
use std::io::{Read, Write};

/// The version of trec_eval whose behaviour [`run`] reproduces.
pub const TREC_EVAL_VERSION: &str = "10.0-rc3";

const USAGE: &str = "Usage: trec_eval [-h] [-q] {-m measure}* trec_rel_file trec_top_file\n\
   -h: Give full help information, including other options\n\
   -q: In addition to summary evaluation, give evaluation for each query\n\
   -m: calculate and print measures indicated by 'measure'\n\
       ('-m all_qrels' prints all qrels measures, '-m official' is default)\n";

/// How a measure takes parameters (`-m name.params`) and its defaults.
#[derive(Clone, Copy)]
enum ParamKind {
    None,
    /// Integer cut-offs, sorted, positive, unique; one value each.
    Longs(&'static [i64]),
    /// Real cut-offs, sorted, unique; one value each.
    Doubles(&'static [f64]),
    /// Real parameters in the order given; one value, named with them when given.
    DoubleParams(&'static [f64]),
    /// `name=value` pairs (gains, rbp's `p`); one value, named with them when given.
    Pairs,
}

/// How a per-query value is printed.
#[derive(Clone, Copy, PartialEq)]
enum Print {
    Long,
    Double,
    /// Only the summary line (`gm_map`, `gm_bpref`).
    SummaryOnly,
    /// Only the summary line, as an integer (`num_q`).
    SummaryLong,
    Relstring,
    Runid,
}

/// How the summary value comes from the per-query ones.
#[derive(Clone, Copy, PartialEq)]
enum Average {
    Mean,
    Sum,
    GeometricMean,
    NumQ,
    NumRel,
    /// Not accumulated (`runid`, `relstring`).
    None,
}

/// One of trec_eval's measures, in the order of its measure table (the order it prints in).
struct Def {
    name: &'static str,
    code: Code,
    params: ParamKind,
    print: Print,
    average: Average,
}

const CUTS: &[i64] = &[5, 10, 15, 20, 30, 100, 200, 500, 1000];
const RECALLS: &[f64] = &[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];
const R_MULTS: &[f64] = &[0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0];

const fn def(
    name: &'static str,
    code: Code,
    params: ParamKind,
    print: Print,
    average: Average,
) -> Def {
    Def {
        name,
        code,
        params,
        print,
        average,
    }
}

use Average as A;
use ParamKind as K;
use Print as P;

/// trec_eval 10.0's measures (measures.c), in its order.
static MEASURES: &[Def] = &[
    def("runid", C::Runid, K::None, P::Runid, A::None),
    def("num_q", C::NumQ, K::None, P::SummaryLong, A::NumQ),
    def("num_ret", C::NumRet, K::None, P::Long, A::Sum),
    def("num_rel", C::NumRel, K::None, P::Long, A::NumRel),
    def("num_rel_ret", C::NumRelRet, K::None, P::Long, A::Sum),
    def("map", C::Map, K::None, P::Double, A::Mean),
    def(
        "gm_map",
        C::GmMap,
        K::None,
        P::SummaryOnly,
        A::GeometricMean,
    ),
    def("Rprec", C::Rprec, K::None, P::Double, A::Mean),
    def("bpref", C::Bpref, K::None, P::Double, A::Mean),
    def("recip_rank", C::RecipRank, K::None, P::Double, A::Mean),
    def(
        "iprec_at_recall",
        C::IprecAtRecall,
        K::Doubles(RECALLS),
        P::Double,
        A::Mean,
    ),
    def("P", C::P, K::Longs(CUTS), P::Double, A::Mean),
    def(
        "relstring",
        C::Relstring,
        K::DoubleParams(&[10.0]),
        P::Relstring,
        A::None,
    ),
    def("recall", C::Recall, K::Longs(CUTS), P::Double, A::Mean),
    def("infAP", C::InfAP, K::None, P::Double, A::Mean),
    def(
        "gm_bpref",
        C::GmBpref,
        K::None,
        P::SummaryOnly,
        A::GeometricMean,
    ),
    def(
        "Rprec_mult",
        C::RprecMult,
        K::Doubles(R_MULTS),
        P::Double,
        A::Mean,
    ),
    def(
        "utility",
        C::Utility,
        K::DoubleParams(&[1.0, -1.0, 0.0, 0.0]),
        P::Double,
        A::Mean,
    ),
    def(
        "11pt_avg",
        C::ElevenPtAvg,
        K::DoubleParams(RECALLS),
        P::Double,
        A::Mean,
    ),
    def("binG", C::BinG, K::None, P::Double, A::Mean),
    def("G", C::G, K::Pairs, P::Double, A::Mean),
    def("dcg", C::Dcg, K::Pairs, P::Double, A::Mean),
    def("ideal_dcg", C::IdealDcg, K::Pairs, P::Double, A::Mean),
    def("ndcg", C::Ndcg, K::Pairs, P::Double, A::Mean),
    def("ndcg_rel", C::NdcgRel, K::Pairs, P::Double, A::Mean),
    def("Rndcg", C::Rndcg, K::Pairs, P::Double, A::Mean),
    def("ndcg_cut", C::NdcgCut, K::Longs(CUTS), P::Double, A::Mean),
    def("map_cut", C::MapCut, K::Longs(CUTS), P::Double, A::Mean),
    def(
        "relative_P",
        C::RelativeP,
        K::Longs(CUTS),
        P::Double,
        A::Mean,
    ),
    def(
        "success",
        C::Success,
        K::Longs(&[1, 5, 10]),
        P::Double,
        A::Mean,
    ),
    def("set_P", C::SetP, K::None, P::Double, A::Mean),
    def(
        "set_relative_P",
        C::SetRelativeP,
        K::None,
        P::Double,
        A::Mean,
    ),
    def("set_recall", C::SetRecall, K::None, P::Double, A::Mean),
    def("set_map", C::SetMap, K::None, P::Double, A::Mean),
    def(
        "set_F",
        C::SetF,
        K::DoubleParams(&[1.0]),
        P::Double,
        A::Mean,
    ),
    def(
        "num_nonrel_judged_ret",
        C::NumNonrelJudgedRet,
        K::None,
        P::Long,
        A::Sum,
    ),
    def(
        "prefs_num_prefs_poss",
        C::PrefsNumPrefsPoss,
        K::None,
        P::Long,
        A::Sum,
    ),
    def(
        "prefs_num_prefs_ful",
        C::PrefsNumPrefsFul,
        K::None,
        P::Long,
        A::Sum,
    ),
    def(
        "prefs_num_prefs_ful_ret",
        C::PrefsNumPrefsFulRet,
        K::None,
        P::Long,
        A::Sum,
    ),
    def("prefs_simp", C::PrefsSimp, K::None, P::Double, A::Mean),
    def("prefs_pair", C::PrefsPair, K::None, P::Double, A::Mean),
    def("prefs_avgjg", C::PrefsAvgjg, K::None, P::Double, A::Mean),
    def(
        "prefs_avgjg_Rnonrel",
        C::PrefsAvgjgRnonrel,
        K::None,
        P::Double,
        A::Mean,
    ),
    def(
        "prefs_simp_ret",
        C::PrefsSimpRet,
        K::None,
        P::Double,
        A::Mean,
    ),
    def(
        "prefs_pair_ret",
        C::PrefsPairRet,
        K::None,
        P::Double,
        A::Mean,
    ),
    def(
        "prefs_avgjg_ret",
        C::PrefsAvgjgRet,
        K::None,
        P::Double,
        A::Mean,
    ),
    def(
        "prefs_avgjg_Rnonrel_ret",
        C::PrefsAvgjgRnonrelRet,
        K::None,
        P::Double,
        A::Mean,
    ),
    def(
        "prefs_simp_imp",
        C::PrefsSimpImp,
        K::None,
        P::Double,
        A::Mean,
    ),
    def(
        "prefs_pair_imp",
        C::PrefsPairImp,
        K::None,
        P::Double,
        A::Mean,
    ),
    def(
        "prefs_avgjg_imp",
        C::PrefsAvgjgImp,
        K::None,
        P::Double,
        A::Mean,
    ),
    def("map_avgjg", C::MapAvgjg, K::None, P::Double, A::Mean),
    def("P_avgjg", C::PAvgjg, K::Longs(CUTS), P::Double, A::Mean),
    def(
        "Rprec_mult_avgjg",
        C::RprecMultAvgjg,
        K::Doubles(R_MULTS),
        P::Double,
        A::Mean,
    ),
    def("yaap", C::Yaap, K::None, P::Double, A::Mean),
    def("rbp", C::Rbp, K::Pairs, P::Double, A::Mean),
    def("rbp_resid", C::RbpResid, K::Pairs, P::Double, A::Mean),
    def("unj", C::Unj, K::Longs(&[5, 10, 20]), P::Double, A::Mean),
];

/// Each measure of [`MEASURES`], to dispatch on without comparing its name for every query.
#[derive(Clone, Copy, PartialEq)]
enum Code {
    Runid,
    NumQ,
    NumRet,
    NumRel,
    NumRelRet,
    Map,
    GmMap,
    Rprec,
    Bpref,
    RecipRank,
    IprecAtRecall,
    P,
    Relstring,
    Recall,
    InfAP,
    GmBpref,
    RprecMult,
    Utility,
    ElevenPtAvg,
    BinG,
    G,
    Dcg,
    IdealDcg,
    Ndcg,
    NdcgRel,
    Rndcg,
    NdcgCut,
    MapCut,
    RelativeP,
    Success,
    SetP,
    SetRelativeP,
    SetRecall,
    SetMap,
    SetF,
    NumNonrelJudgedRet,
    PrefsNumPrefsPoss,
    PrefsNumPrefsFul,
    PrefsNumPrefsFulRet,
    PrefsSimp,
    PrefsPair,
    PrefsAvgjg,
    PrefsAvgjgRnonrel,
    PrefsSimpRet,
    PrefsPairRet,
    PrefsAvgjgRet,
    PrefsAvgjgRnonrelRet,
    PrefsSimpImp,
    PrefsPairImp,
    PrefsAvgjgImp,
    MapAvgjg,
    PAvgjg,
    RprecMultAvgjg,
    Yaap,
    Rbp,
    RbpResid,
    Unj,
}

use Code as C;

/// trec_eval's nicknames for sets of measures.
static NICKNAMES: &[(&str, &[&str])] = &[
    (
        "official",
        &[
            "runid",
            "num_q",
            "num_ret",
            "num_rel",
            "num_rel_ret",
            "map",
            "gm_map",
            "Rprec",
            "bpref",
            "recip_rank",
            "iprec_at_recall",
            "P",
        ],
    ),
    (
        "set",
        &[
            "runid",
            "num_q",
            "num_ret",
            "num_rel",
            "num_rel_ret",
            "utility",
            "set_P",
            "set_recall",
            "set_relative_P",
            "set_map",
            "set_F",
        ],
    ),
    (
        "all_trec",
        &[
            "runid",
            "num_q",
            "num_ret",
            "num_rel",
            "num_rel_ret",
            "map",
            "gm_map",
            "Rprec",
            "bpref",
            "recip_rank",
            "iprec_at_recall",
            "P",
            "relstring",
            "recall",
            "unj",
            "rbp",
            "rbp_resid",
            "infAP",
            "gm_bpref",
            "utility",
            "11pt_avg",
            "ndcg",
            "relative_P",
            "Rprec_mult",
            "success",
            "map_cut",
            "ndcg_cut",
            "ndcg_rel",
            "Rndcg",
            "binG",
            "G",
            "set_P",
            "set_recall",
            "set_relative_P",
            "set_map",
            "set_F",
            "num_nonrel_judged_ret",
        ],
    ),
    (
        "all_prefs",
        &[
            "runid",
            "num_q",
            "prefs_num_prefs_poss",
            "prefs_num_prefs_ful",
            "prefs_num_prefs_ful_ret",
            "prefs_simp",
            "prefs_pair",
            "prefs_avgjg",
            "prefs_avgjg_Rnonrel",
            "prefs_simp_ret",
            "prefs_pair_ret",
            "prefs_avgjg_ret",
            "prefs_avgjg_Rnonrel_ret",
            "prefs_simp_imp",
            "prefs_pair_imp",
            "prefs_avgjg_imp",
        ],
    ),
    (
        "prefs",
        &[
            "runid",
            "num_q",
            "prefs_num_prefs_poss",
            "prefs_num_prefs_ful",
            "prefs_num_prefs_ful_ret",
            "prefs_simp",
            "prefs_pair",
            "prefs_avgjg",
        ],
    ),
    (
        "qrels_jg",
        &["runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg"],
    ),
];

/// The names `-m all_trec` prints, parameters expanded (trec_eval's defaults): 100 names.
///
/// ```
/// let names = rag_eval::trec::trec_eval::all_trec_names();
/// assert_eq!(names.len(), 100);
/// assert_eq!(names[..3], ["runid", "num_q", "num_ret"]);
/// assert!(names.contains(&"ndcg_cut_10".to_string()));
/// ```
pub fn all_trec_names() -> Vec<String> {
    let (_, list) = NICKNAMES[2];
    let mut out = Vec::new();
    for d in MEASURES.iter().filter(|d| list.contains(&d.name)) {
        match d.params {
            K::Longs(c) => out.extend(c.iter().map(|k| format!("{}_{k}", d.name))),
            K::Doubles(c) => out.extend(c.iter().map(|x| format!("{}_{x:.2}", d.name))),
            _ => out.push(d.name.to_owned()),
        }
    }
    out
}

/// The parsed command line.
struct Options {
    query: bool,
    complete: bool,
    judged_only: bool,
    summary: bool,
    level: i64,
    num_docs: i64,
    max_docs: i64,
    debug_query: Option<String>,
    rel_format: String,
    results_format: String,
    zscores: Option<String>,
    help: bool,
    /// `(measure name, parameters)` of each `-m name.params`, in order.
    measure_args: Vec<(String, String)>,
    /// Marked measures (indices of [`MEASURES`]).
    marked: Vec<bool>,
    any_marked: bool,
    files: Vec<String>,
}

/// What ends a run early: the exit code, after the messages were written.
struct Exit(i32);

type Outcome<T> = std::result::Result<T, Exit>;

fn fail(err: &mut dyn Write, message: &str, code: i32) -> Exit {
    let _ = err.write_all(message.as_bytes());
    Exit(code)
}

fn usage(err: &mut dyn Write) -> Exit {
    fail(err, USAGE, 1)
}

const LONG_OPTIONS: &[(&str, bool, char)] = &[
    ("help", false, 'h'),
    ("version", false, 'v'),
    ("query_eval_wanted", false, 'q'),
    ("measure", true, 'm'),
    ("complete_rel_info_wanted", false, 'c'),
    ("level_for_rel", true, 'l'),
    ("nosummary", false, 'n'),
    ("Debug_level", true, 'D'),
    ("Judged_docs_only", false, 'J'),
    ("Number_docs_in_coll", true, 'N'),
    ("Max_retrieved_per_topic", true, 'M'),
    ("Rel_info_format", true, 'R'),
    ("Results_format", true, 'T'),
    ("Output_old_results_format", true, 'o'),
    ("Zscore", true, 'Z'),
];

fn takes_argument(c: char) -> Option<bool> {
    match c {
        'h' | 'v' | 'q' | 'c' | 'n' | 'J' | 'o' => Some(false),
        'm' | 'l' | 'D' | 'N' | 'M' | 'R' | 'T' | 'Z' => Some(true),
        _ => None,
    }
}

/// Parses the command line as GNU `getopt_long` does for trec_eval (options anywhere, `--`
/// ending them, `-mP.5` and `-m P.5`, `--measure=P.5`, unambiguous long prefixes), acting on
/// each option as it comes, as trec_eval does.
fn parse_options(args: &[String], err: &mut dyn Write) -> Outcome<Options> {
    let mut o = Options {
        query: false,
        complete: false,
        judged_only: false,
        summary: true,
        level: 1,
        num_docs: 0,
        max_docs: i64::MAX,
        debug_query: None,
        rel_format: "qrels".into(),
        results_format: "trec_results".into(),
        zscores: None,
        help: false,
        measure_args: Vec::new(),
        marked: vec![false; MEASURES.len()],
        any_marked: false,
        files: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            o.files.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (long, None),
            };
            let exact = LONG_OPTIONS.iter().find(|l| l.0 == name);
            let candidates: Vec<_> = LONG_OPTIONS
                .iter()
                .filter(|l| l.0.starts_with(name))
                .collect();
            let found = match (exact, candidates.len()) {
                (Some(l), _) => l,
                (None, 1) => candidates[0],
                (None, 0) => {
                    let _ = writeln!(err, "trec_eval: unrecognized option '--{name}'");
                    return Err(usage(err));
                }
                (None, _) => {
                    let _ = writeln!(err, "trec_eval: option '--{name}' is ambiguous");
                    return Err(usage(err));
                }
            };
            let value = match (found.1, value) {
                (true, Some(v)) => Some(v),
                (true, None) => match args.get(i) {
                    Some(v) => {
                        i += 1;
                        Some(v.clone())
                    }
                    None => {
                        let _ = writeln!(
                            err,
                            "trec_eval: option '--{}' requires an argument",
                            found.0
                        );
                        return Err(usage(err));
                    }
                },
                (false, Some(_)) => {
                    let _ = writeln!(
                        err,
                        "trec_eval: option '--{}' doesn't allow an argument",
                        found.0
                    );
                    return Err(usage(err));
                }
                (false, None) => None,
            };
            apply_option(&mut o, found.2, value, err)?;
            continue;
        }
        if arg.len() < 2 || !arg.starts_with('-') {
            o.files.push(arg.clone());
            continue;
        }
        let flags: Vec<char> = arg[1..].chars().collect();
        let mut j = 0;
        while j < flags.len() {
            let c = flags[j];
            j += 1;
            match takes_argument(c) {
                None => {
                    let _ = writeln!(err, "trec_eval: invalid option -- '{c}'");
                    return Err(usage(err));
                }
                Some(false) => apply_option(&mut o, c, None, err)?,
                Some(true) => {
                    let value = if j < flags.len() {
                        let v: String = flags[j..].iter().collect();
                        j = flags.len();
                        v
                    } else if let Some(v) = args.get(i) {
                        i += 1;
                        v.clone()
                    } else {
                        let _ = writeln!(err, "trec_eval: option requires an argument -- '{c}'");
                        return Err(usage(err));
                    };
                    apply_option(&mut o, c, Some(value), err)?;
                }
            }
        }
    }
    Ok(o)
}

fn apply_option(
    o: &mut Options,
    c: char,
    value: Option<String>,
    err: &mut dyn Write,
) -> Outcome<()> {
    let value = value.unwrap_or_default();
    match c {
        'h' => o.help = true,
        'v' => {
            let _ = writeln!(
                err,
                "trec_eval version {TREC_EVAL_VERSION} (rag-eval {})",
                env!("CARGO_PKG_VERSION")
            );
            return Err(Exit(0));
        }
        'q' => o.query = true,
        'm' => {
            if !mark_measure(o, &value, err) {
                let name = value.split('.').next().unwrap_or_default();
                return Err(fail(
                    err,
                    &format!("trec_eval: illegal measure '{name}'\n"),
                    1,
                ));
            }
            o.any_marked = true;
        }
        'c' => o.complete = true,
        'l' => o.level = m::atol(value.as_bytes()),
        'n' => o.summary = false,
        // `-D level.qid` evaluates one query; trec_eval keeps the '.' in the id it compares
        // (so `-D 1.301` matches no query), which is reproduced.
        'D' => {
            if let Some(at) = value.find('.') {
                o.debug_query = Some(value[at..].to_owned());
            }
        }
        'J' => o.judged_only = true,
        'N' => o.num_docs = m::atol(value.as_bytes()),
        'M' => o.max_docs = m::atol(value.as_bytes()),
        'R' => o.rel_format = value,
        'T' => o.results_format = value,
        'o' => {}
        'Z' => o.zscores = Some(value),
        _ => return Err(usage(err)),
    }
    Ok(())
}

/// Marks the measures `-m` names: a nickname's or one measure, with `.params` recorded.
fn mark_measure(o: &mut Options, arg: &str, err: &mut dyn Write) -> bool {
    let name = match arg.split_once('.') {
        Some((name, params)) => {
            if params.is_empty() {
                let _ = writeln!(err, "trec_eval: improper measure in parameter '{name}'");
                return false;
            }
            o.measure_args.push((name.to_owned(), params.to_owned()));
            name
        }
        None => arg,
    };
    let list: Vec<&str> = match NICKNAMES.iter().find(|(n, _)| *n == name) {
        Some((_, list)) => list.to_vec(),
        None => vec![name],
    };
    for one in list {
        match MEASURES.iter().position(|d| d.name == one) {
            Some(i) => o.marked[i] = true,
            None => return false,
        }
    }
    true
}

/// A measure to compute, with its parameters and the names of its values.
struct Requested {
    def: &'static Def,
    /// The judgements it reads ([`Format::read_by`]).
    reads: Option<Format>,
    param: Param,
    names: Vec<String>,
    /// Index of its first value among a query's values.
    slot: usize,
}

#[derive(Clone)]
enum Param {
    None,
    Longs(Vec<i64>),
    Doubles(Vec<f64>),
    Pairs(Vec<(String, f64)>),
}

/// Reads `-m` parameters into the form the measure takes; `None` after writing trec_eval's
/// message when they are not valid.
fn parse_param(def: &Def, given: Option<&str>, err: &mut dyn Write) -> Option<(Param, bool)> {
    let split = |s: &str| -> Vec<String> { s.split(',').map(str::to_owned).collect() };
    Some(match (def.params, given) {
        (K::None, _) => (Param::None, false),
        (K::Longs(d), None) => (Param::Longs(d.to_vec()), false),
        (K::Doubles(d), None) | (K::DoubleParams(d), None) => (Param::Doubles(d.to_vec()), false),
        (K::Pairs, None) => (Param::Pairs(Vec::new()), false),
        (K::Longs(_), Some(s)) => {
            let mut v: Vec<i64> = split(s).iter().map(|x| m::atol(x.as_bytes())).collect();
            v.sort_unstable();
            if v[0] <= 0 {
                let _ = writeln!(err, "trec_eval: Negative cutoff detected");
                return None;
            }
            if v.windows(2).any(|w| w[0] == w[1]) {
                let _ = writeln!(err, "trec_eval: duplicate cutoffs detected");
                return None;
            }
            (Param::Longs(v), true)
        }
        (K::Doubles(_), Some(s)) => {
            let mut v: Vec<f64> = split(s).iter().map(|x| atof(x.as_bytes())).collect();
            v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
            if v.windows(2).any(|w| w[0] == w[1]) {
                let _ = writeln!(err, "trec_eval: duplicate cutoffs detected");
                return None;
            }
            (Param::Doubles(v), true)
        }
        (K::DoubleParams(_), Some(s)) => (
            Param::Doubles(split(s).iter().map(|x| atof(x.as_bytes())).collect()),
            true,
        ),
        (K::Pairs, Some(s)) => {
            // Each comma-separated item must be `name=value` (trec_eval's check).
            let mut last = ',';
            for ch in s.chars() {
                if ch == ',' {
                    if last == ',' {
                        break;
                    }
                    last = ',';
                } else if ch == '=' {
                    if last == '=' {
                        last = ',';
                        break;
                    }
                    last = '=';
                }
            }
            if last != '=' {
                let _ = writeln!(err, "trec_eval: malformed pair parameters in '{s}'");
                return None;
            }
            let pairs = s
                .split(',')
                .map(|item| {
                    let (name, value) = item.split_once('=').unwrap_or(("", item));
                    (name.to_owned(), atof(value.as_bytes()))
                })
                .collect();
            (Param::Pairs(pairs), true)
        }
    })
}

/// The measures marked, initialised with their parameters, in trec_eval's order.
fn init_measures(o: &Options, err: &mut dyn Write) -> Outcome<(Vec<Requested>, usize)> {
    let mut out = Vec::new();
    let mut slot = 0;
    for (i, def) in MEASURES.iter().enumerate() {
        if !o.marked[i] {
            continue;
        }
        let cannot = |err: &mut dyn Write| {
            fail(
                err,
                &format!("trec_eval: Cannot initialize measure '{}'\n", def.name),
                2,
            )
        };
        let given = o
            .measure_args
            .iter()
            .find(|(n, _)| n == def.name)
            .map(|(_, p)| p.as_str());
        let Some((param, printable)) = parse_param(def, given, err) else {
            return Err(cannot(err));
        };
        let names: Vec<String> = match (&param, def.params) {
            (_, K::None) if def.print == P::Runid => Vec::new(),
            (Param::Longs(c), K::Longs(_)) => {
                c.iter().map(|k| format!("{}_{k}", def.name)).collect()
            }
            (Param::Doubles(c), K::Doubles(_)) => {
                c.iter().map(|x| format!("{}_{x:.2}", def.name)).collect()
            }
            _ if printable => vec![format!("{}_{}", def.name, given.unwrap_or_default())],
            _ => vec![def.name.to_owned()],
        };
        let n = names.len();
        out.push(Requested {
            def,
            reads: Format::read_by(def.name),
            param,
            names,
            slot,
        });
        slot += n;
    }
    Ok((out, slot))
}

/// The format of judgements a measure reads.
#[derive(Clone, Copy, PartialEq)]
enum Format {
    Qrels,
    Prefs,
    Groups,
}

impl Format {
    /// What `name` reads (trec_eval's form_res_rels, form_prefs_counts or form_res_rels_jg);
    /// `None` for `runid` and `num_q`, which read nothing.
    fn read_by(name: &str) -> Option<Format> {
        match name {
            "runid" | "num_q" => None,
            _ if name.starts_with("prefs_") => Some(Format::Prefs),
            _ if name.ends_with("_avgjg") => Some(Format::Groups),
            _ => Some(Format::Qrels),
        }
    }

    /// trec_eval's message when a measure that reads this format gets another.
    fn refusal(self) -> &'static str {
        match self {
            Format::Qrels => {
                "trec_eval.form_res_qrels: rel_info format not qrels or results format not \
                 trec_results\n"
            }
            Format::Prefs => {
                "trec_eval.form_prefs_info: prefs_info format not (prefs or qrels_prefs) or \
                 results format not trec_results\n"
            }
            Format::Groups => {
                "trec_eval: rel_info format not qrels_jg or results format not trec_results\n"
            }
        }
    }
}

impl Other<'_> {
    fn format(&self) -> Format {
        match self {
            Other::Qrels => Format::Qrels,
            Other::Prefs(_) => Format::Prefs,
            Other::Groups(_) => Format::Groups,
        }
    }
}

/// Reads judgements in the `-R` format (`qrels`, `prefs`, `qrels_prefs` or `qrels_jg`),
/// sorted by query id; the error is trec_eval's message after `trec_eval.`.
fn read_rel_info<'a>(
    format: &str,
    text: &'a [u8],
) -> std::result::Result<Vec<JudgedQuery<'a>>, String> {
    let reader = match format {
        "prefs" => "get_prefs",
        "qrels_prefs" => "get_qrels_prefs",
        "qrels_jg" => "get_qrels_jg",
        _ => "get_qrels",
    };
    let malformed = |line| format!("{reader}: Malformed line {line}");
    let judged = |qid, other| JudgedQuery {
        qid,
        docs: Vec::new(),
        other,
    };
    Ok(match format {
        "prefs" | "qrels_prefs" => p::read_prefs(text, format == "prefs", atof)
            .map_err(malformed)?
            .into_iter()
            .map(|(qid, prefs)| judged(qid, Other::Prefs(prefs)))
            .collect(),
        "qrels_jg" => g::read_qrels_jg(text)
            .map_err(|e| match e {
                g::GroupsError::Malformed(line) => malformed(line),
                // trec_eval's qrels_jg reader names itself get_qrels here.
                g::GroupsError::Duplicate(docno) => format!("get_qrels: duplicate docs {docno}"),
            })?
            .into_iter()
            .map(|(qid, groups)| judged(qid, Other::Groups(groups)))
            .collect(),
        _ => read_qrels(text).map_err(malformed)?,
    })
}

/// z-scores: `(qid, measure)` → `(mean, standard deviation)`.
type ZScores = std::collections::HashMap<(Vec<u8>, Vec<u8>), (f64, f64)>;

fn read_zscores(text: &[u8]) -> std::result::Result<ZScores, usize> {
    let mut out = ZScores::new();
    for (i, line) in text
        .strip_suffix(b"\n")
        .unwrap_or(text)
        .split(|&b| b == b'\n')
        .enumerate()
    {
        let (f, n) = tokens::<4>(line);
        if n < 4 {
            return Err(i + 1);
        }
        out.insert((f[0].to_vec(), f[1].to_vec()), (atof(f[2]), atof(f[3])));
    }
    Ok(out)
}

const MISSING_ZSCORE: f64 = -1000000.0;

/// A query's figures: one per value name, and its relstring.
struct QueryValues {
    values: Vec<f64>,
    relstring: String,
}

/// A query's figures; the error that stops the run; `None` for a query without results
/// (without `-c`).
type Computed = Option<std::result::Result<QueryValues, String>>;

/// Everything a query's computation reads.
struct Context<'a> {
    o: &'a Options,
    measures: &'a [Requested],
    num_values: usize,
    /// The first measure that joins the run with the qrels: errors doing so are its.
    first_joining: Option<&'static str>,
}

/// Computes every requested measure for one query.
fn evaluate_query<'a>(
    ctx: &Context<'_>,
    scratch: &mut Scratch<'a>,
    judged: &JudgedQuery<'_>,
    docs: impl Iterator<Item = (&'a [u8], u64)> + Clone,
    bogus: bool,
) -> std::result::Result<QueryValues, String> {
    let mut values = vec![0.0; ctx.num_values];
    let mut relstring = String::new();
    let cannot = |e: &str, name: &str| format!("{e}trec_eval: Can't calculate measure '{name}'\n");
    let format = judged.other.format();
    let o = ctx.o;
    let ranked = match ctx.first_joining {
        Some(name) if format == Format::Qrels && Format::read_by(name) == Some(format) => Some(
            rank(
                scratch,
                docs.clone(),
                judged,
                o.level,
                o.max_docs,
                o.judged_only,
            )
            .map_err(|e| cannot(&e, name))?,
        ),
        // Other formats are joined by the first measure that reads them, below.
        Some(_) => Some(Ranked::default()),
        None => None,
    };
    let (mut prefs, mut groups): (Option<PrefCounts>, Option<Vec<Ranked>>) = (None, None);
    let Some(r) = ranked else {
        for req in ctx.measures {
            if req.def.name == "num_q" {
                values[req.slot] = 1.0;
            }
        }
        return Ok(QueryValues { values, relstring });
    };
    // The gains without parameters, which every gain-based measure of all_trec uses: set up
    // once for the query.
    let default_gains = std::cell::OnceCell::new();
    let gains = |pairs: &[(String, f64)]| -> std::borrow::Cow<'_, Gains> {
        if pairs.is_empty() {
            std::borrow::Cow::Borrowed(default_gains.get_or_init(|| Gains::new(&r, &[])))
        } else {
            std::borrow::Cow::Owned(Gains::new(&r, pairs))
        }
    };
    // Figures that two measures share, computed for the first.
    let (ap, bpref) = (std::cell::OnceCell::new(), std::cell::OnceCell::new());
    let mut iprec: Option<(&[f64], Vec<f64>)> = None;
    for req in ctx.measures {
        let out = &mut values[req.slot..req.slot + req.names.len()];
        let longs = || match &req.param {
            Param::Longs(c) => c.as_slice(),
            _ => &[],
        };
        let doubles = || match &req.param {
            Param::Doubles(c) => c.as_slice(),
            _ => &[],
        };
        let pairs = || match &req.param {
            Param::Pairs(p) => p.as_slice(),
            _ => &[],
        };
        let one = |out: &mut [f64], v: f64| out[0] = v;
        match req.reads {
            Some(read) if read != format => return Err(cannot(read.refusal(), req.def.name)),
            Some(Format::Prefs) if prefs.is_none() => {
                let Other::Prefs(lines) = &judged.other else {
                    unreachable!("the format is prefs")
                };
                let max = usize::try_from(ctx.o.max_docs.max(0)).unwrap_or(usize::MAX);
                let scored: Vec<(&[u8], f64)> =
                    docs.clone().map(|(d, k)| (d, key_score(k))).collect();
                prefs = Some(
                    PrefCounts::new(lines, &scored, max).map_err(|e| cannot(&e, req.def.name))?,
                );
            }
            Some(Format::Groups) if groups.is_none() => {
                let Other::Groups(list) = &judged.other else {
                    unreachable!("the format is qrels_jg")
                };
                let mut ranked = Vec::with_capacity(list.len());
                for docs_judged in list {
                    let one_group = JudgedQuery {
                        qid: judged.qid,
                        docs: docs_judged.clone(),
                        other: Other::Qrels,
                    };
                    ranked.push(
                        rank(
                            scratch,
                            docs.clone(),
                            &one_group,
                            o.level,
                            o.max_docs,
                            o.judged_only,
                        )
                        .map_err(|e| cannot(&e, req.def.name))?,
                    );
                }
                groups = Some(ranked);
            }
            _ => {}
        }
        let pc = || prefs.as_ref().expect("joined above");
        let gs = || groups.as_deref().expect("joined above");
        match req.def.code {
            C::Runid => {}
            C::NumQ => one(out, 1.0),
            C::NumRet => one(out, r.num_ret() as f64),
            C::NumRel => one(out, r.num_rel as f64),
            C::NumRelRet => one(out, r.num_rel_ret as f64),
            C::Map => one(out, *ap.get_or_init(|| m::average_precision(&r))),
            // gm_map is the logarithm of the same average precision (m::log_average_precision).
            C::GmMap => one(
                out,
                ap.get_or_init(|| m::average_precision(&r))
                    .max(m::MIN_GEO_MEAN)
                    .ln(),
            ),
            C::Rprec => one(out, m::r_precision(&r)),
            C::Bpref => one(out, *bpref.get_or_init(|| m::bpref(&r))),
            C::RecipRank => one(out, m::reciprocal_rank(&r)),
            C::IprecAtRecall => {
                let values = m::iprec_at_recall(&r, doubles());
                out.copy_from_slice(&values);
                iprec = Some((doubles(), values));
            }
            C::P => out.copy_from_slice(&m::precision(&r, longs())),
            C::Relstring => {
                let len = doubles().first().copied().unwrap_or(10.0);
                relstring = m::relstring(&r, len as i64);
            }
            C::Recall => out.copy_from_slice(&m::recall(&r, longs())),
            C::InfAP => one(out, m::inferred_ap(&r)),
            C::GmBpref => one(
                out,
                bpref.get_or_init(|| m::bpref(&r)).max(m::MIN_GEO_MEAN).ln(),
            ),
            C::RprecMult => out.copy_from_slice(&m::r_precision_mult(&r, doubles())),
            C::Utility => {
                let Ok(c) = <[f64; 4]>::try_from(doubles()) else {
                    return Err("trec_eval.calc_utility: improper number of coefficients\n\
                                trec_eval: Can't calculate measure 'utility'\n"
                        .to_owned());
                };
                one(out, m::utility(&r, &c, ctx.o.num_docs));
            }
            // The mean of iprec_at_recall at the same recalls (m::eleven_point_average).
            C::ElevenPtAvg => one(
                out,
                match &iprec {
                    Some((at, values)) if *at == doubles() => {
                        values.iter().sum::<f64>() / values.len() as f64
                    }
                    _ => m::eleven_point_average(&r, doubles()),
                },
            ),
            C::BinG => one(out, m::bin_g(&r)),
            C::G => one(out, m::g_measure(&r, &gains(pairs()))),
            C::Dcg => one(out, m::dcg(&r, &gains(pairs())).0),
            C::IdealDcg => one(out, m::dcg(&r, &gains(pairs())).1),
            C::Ndcg => one(out, m::ndcg(&r, &gains(pairs()))),
            C::NdcgRel => one(out, m::ndcg_rel(&r, &gains(pairs()))),
            C::Rndcg => one(out, m::r_ndcg(&r, &gains(pairs()))),
            C::NdcgCut => out.copy_from_slice(&m::ndcg_cut(&r, longs())),
            C::MapCut => out.copy_from_slice(&m::map_cut(&r, longs())),
            C::RelativeP => out.copy_from_slice(&m::relative_precision(&r, longs())),
            C::Success => out.copy_from_slice(&m::success(&r, longs())),
            C::SetP => one(out, m::set_precision(&r)),
            C::SetRelativeP => one(out, m::set_relative_precision(&r)),
            C::SetRecall => one(out, m::set_recall(&r)),
            C::SetMap => one(out, m::set_map(&r)),
            C::SetF => one(out, m::set_f(&r, doubles().first().copied().unwrap_or(1.0))),
            C::NumNonrelJudgedRet => one(out, m::num_nonrel_judged_ret(&r)),
            C::Rbp => {
                let p = m::rbp_persistence(pairs());
                one(out, m::rbp(&r, &gains(pairs()), p));
            }
            C::RbpResid => one(out, m::rbp_resid(&r, m::rbp_persistence(pairs()))),
            C::Unj => out.copy_from_slice(&m::unjudged(&r, longs())),
            C::PrefsNumPrefsPoss => one(out, p::num_prefs_poss(pc())),
            C::PrefsNumPrefsFul => one(out, p::num_prefs_ful(pc())),
            C::PrefsNumPrefsFulRet => one(out, p::num_prefs_ful_ret(pc())),
            C::PrefsSimp => one(out, p::simp(pc())),
            C::PrefsPair => one(out, p::pair(pc())),
            C::PrefsAvgjg => one(out, p::avgjg(pc())),
            C::PrefsAvgjgRnonrel => one(out, p::avgjg_rnonrel(pc())),
            C::PrefsSimpRet => one(out, p::simp_ret(pc())),
            C::PrefsPairRet => one(out, p::pair_ret(pc())),
            C::PrefsAvgjgRet => one(out, p::avgjg_ret(pc())),
            C::PrefsAvgjgRnonrelRet => one(out, p::avgjg_rnonrel_ret(pc())),
            C::PrefsSimpImp => one(out, p::simp_imp(pc())),
            C::PrefsPairImp => one(out, p::pair_imp(pc())),
            C::PrefsAvgjgImp => one(out, p::avgjg_imp(pc())),
            C::MapAvgjg => one(out, g::map_avgjg(gs())),
            C::PAvgjg => out.copy_from_slice(&g::precision_avgjg(gs(), longs())),
            C::RprecMultAvgjg => out.copy_from_slice(&g::r_precision_mult_avgjg(gs(), doubles())),
            C::Yaap => one(out, m::yaap(&r)),
        }
    }
    if bogus {
        // What trec_eval resets for a query without results under -c (trec_eval.c), by the
        // exact names it compares (`utility_2,-1,0,0` is not reset).
        for req in ctx.measures {
            for (k, name) in req.names.iter().enumerate() {
                if name == "num_ret"
                    || name == "utility"
                    || name.starts_with("unj")
                    || name == "rbp_resid"
                {
                    values[req.slot + k] = 0.0;
                }
            }
            // By exact name, as trec_eval: `relstring_20` keeps the bogus document's string.
            if req.names.first().is_some_and(|n| n == "relstring") {
                relstring.clear();
            }
        }
    }
    scratch.reuse(r);
    Ok(QueryValues { values, relstring })
}

/// `%6.4f`, with C's spelling of NaN.
fn fixed(v: f64) -> String {
    if v.is_nan() {
        format!("{:>6}", if v.is_sign_negative() { "-nan" } else { "nan" })
    } else {
        format!("{v:6.4}")
    }
}

/// Prints one query's lines (`-q`) as trec_eval's `print_single_meas` procedures do.
fn print_values(
    out: &mut Vec<u8>,
    measures: &[Requested],
    values: &[f64],
    relstring: &str,
    qid: &[u8],
    z: bool,
) {
    let prefix = if z { "Z" } else { "" };
    for req in measures {
        for (k, name) in req.names.iter().enumerate() {
            let v = values[req.slot + k];
            match req.def.print {
                P::SummaryOnly | P::SummaryLong | P::Runid => {}
                P::Relstring => {
                    let _ = write!(out, "{name:<22}\t");
                    out.extend_from_slice(qid);
                    let _ = writeln!(out, "\t'{relstring}'");
                }
                P::Long if !z => {
                    let _ = write!(out, "{name:<22}\t");
                    out.extend_from_slice(qid);
                    let _ = writeln!(out, "\t{}", v as i64);
                }
                P::Long | P::Double => {
                    let _ = write!(out, "{prefix}{name:<22}\t");
                    out.extend_from_slice(qid);
                    let _ = writeln!(out, "\t{}", fixed(v));
                }
            }
        }
    }
}

/// Runs trec_eval with `args` (without the program name), the run read from `stdin` when its
/// path is `-`: writes what trec_eval writes to `out` and `err` and returns its exit code.
///
/// ```
/// use rag_eval::trec::trec_eval;
///
/// let dir = tempfile::tempdir().unwrap();
/// let qrels = dir.path().join("qrels");
/// std::fs::write(&qrels, "q1 0 d1 1\nq1 0 d2 0\n").unwrap();
/// let args = ["-m", "P.1", qrels.to_str().unwrap(), "-"].map(String::from);
/// let (mut out, mut err) = (Vec::new(), Vec::new());
/// let run = "q1 Q0 d2 1 0.9 bm25\nq1 Q0 d1 2 0.8 bm25\n";
/// let code = trec_eval::run(&args, &mut run.as_bytes(), &mut out, &mut err);
/// assert_eq!(code, 0);
/// assert_eq!(String::from_utf8(out).unwrap(), "P_1                   \tall\t0.0000\n");
/// ```
pub fn run(args: &[String], stdin: &mut dyn Read, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    run_in_blocks(args, stdin, out, err, BLOCK_BYTES)
}

/// [`run`], a run file read in blocks of about `block_bytes` bytes.
pub(super) fn run_in_blocks(
    args: &[String],
    stdin: &mut dyn Read,
    out: &mut dyn Write,
    err: &mut dyn Write,
    block_bytes: usize,
) -> i32 {
    match run_inner(args, stdin, out, err, block_bytes) {
        Ok(()) => 0,
        Err(Exit(code)) => code,
    }
}

fn read_file(path: &str, stdin: &mut dyn Read) -> Option<Vec<u8>> {
    if path.starts_with('-') {
        let mut buf = Vec::new();
        stdin.read_to_end(&mut buf).ok()?;
        return Some(buf);
    }
    std::fs::read(path).ok().filter(|b| !b.is_empty())
}

/// Queries whose figures are computed (and held) at a time.
const BATCH: usize = 8192;

/// The first measure that joins the run with the qrels: errors doing so are its.
fn first_joining(measures: &[Requested]) -> Option<&'static str> {
    measures
        .iter()
        .map(|r| r.def.name)
        .find(|&n| n != "runid" && n != "num_q")
}

/// A query's figures, or the error that stops the run.
type Figures = std::result::Result<QueryValues, String>;

/// The run, read one way or the other.
enum Source<'a> {
    /// Read whole: its queries are computed in batches.
    Whole(Results<'a>),
    /// Read in blocks, each query computed as it was read: per query of the work list, its
    /// figures if the run has it.
    Streamed(Vec<Option<Figures>>),
}

/// What reading the run in blocks gave.
enum Streamed {
    /// Per query of the work list, its figures if the run has it; the run id.
    Figures(Vec<Option<Figures>>, Vec<u8>),
    /// The first malformed line, numbered as trec_eval numbers it.
    Malformed(usize),
    /// The file cannot be opened or read, or it is empty.
    Unreadable,
    /// The lines of a judged query are apart in the file (or the run is read from standard
    /// input): it is read whole instead.
    NotGrouped,
}

/// What one block of the run gives.
struct BlockFigures {
    bytes: usize,
    /// Lines read (blank and comment lines left out).
    count: usize,
    malformed: Option<usize>,
    run_id: Option<Vec<u8>>,
    /// `(place in the work list, figures)` of each stretch of a judged query's lines.
    queries: Vec<(usize, Figures)>,
}

/// Reads the run at `path` in blocks of whole lines, parsed and scored on `threads` threads
/// as they are read: a judged query is computed as soon as its lines are in, and memory holds
/// a few blocks and the figures rather than the file. This takes every query's lines to be
/// together, as retrieval systems write them; when a judged query turns up twice, the figures
/// are dropped ([`Streamed::NotGrouped`]) and the run is read whole.
fn stream_run(
    path: &str,
    ctx: &Context<'_>,
    qrels: &[JudgedQuery<'_>],
    work: &[usize],
    block_bytes: usize,
    threads: usize,
) -> Streamed {
    let index: QidMap<&[u8], usize> = work
        .iter()
        .enumerate()
        .map(|(w, &i)| (qrels[i].qid, w))
        .collect();
    let score_block = |_: &mut (), block: &Block| {
        let piece = read_run_piece(&block.bytes);
        let mut queries = Vec::new();
        if piece.malformed().is_none() {
            let mut scratch = Scratch::default();
            for (qid, docs) in piece.stretches() {
                if let Some(&w) = index.get(qid) {
                    let figures = evaluate_query(ctx, &mut scratch, &qrels[work[w]], docs, false);
                    queries.push((w, figures));
                }
            }
        }
        BlockFigures {
            bytes: block.bytes.len(),
            count: piece.count(),
            malformed: piece.malformed(),
            run_id: piece.run_id().map(<[u8]>::to_vec),
            queries,
        }
    };
    let mut figures: Vec<Option<Figures>> = Vec::new();
    figures.resize_with(work.len(), || None);
    let (mut bytes, mut lines, mut run_id) = (0, 0, Vec::new());
    let mut outcome = None;
    let take = |b: BlockFigures| {
        if let Some(line) = b.malformed {
            outcome = Some(Streamed::Malformed(lines + line));
            return Ok(false);
        }
        bytes += b.bytes;
        lines += b.count;
        if let Some(id) = b.run_id {
            run_id = id;
        }
        for (w, f) in b.queries {
            if figures[w].replace(f).is_some() {
                outcome = Some(Streamed::NotGrouped);
                return Ok(false);
            }
        }
        Ok(true)
    };
    let read = in_parallel(
        Utf8Path::new(path),
        threads,
        block_bytes,
        || (),
        score_block,
        take,
    );
    match (read, outcome) {
        (Err(_), _) => Streamed::Unreadable,
        (_, Some(outcome)) => outcome,
        _ if bytes == 0 => Streamed::Unreadable,
        _ => Streamed::Figures(figures, run_id),
    }
}

fn run_inner(
    args: &[String],
    stdin: &mut dyn Read,
    out: &mut dyn Write,
    err: &mut dyn Write,
    block_bytes: usize,
) -> Outcome<()> {
    let mut o = parse_options(args, err)?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if o.help {
        let _ = out.write_all(help().as_bytes());
        return Ok(());
    }
    if o.files.len() != 2 {
        return Err(usage(err));
    }
    let (qrels_path, run_path) = (o.files[0].clone(), o.files[1].clone());
    let quit = |err: &mut dyn Write, path: &str| {
        fail(err, &format!("trec_eval: Quit in file '{path}'\n"), 2)
    };
    let cannot_read_run = |err: &mut dyn Write, path: &str| {
        let _ = writeln!(
            err,
            "trec_eval.get_results: Cannot read results file '{path}'"
        );
        quit(err, path)
    };
    // What trec_eval's reader of each format says of a file it cannot read.
    let cannot_read = match o.rel_format.as_str() {
        "qrels" => "get_qrels: Cannot read qrels",
        "prefs" | "qrels_prefs" => "get_prefs: Cannot read prefs",
        "qrels_jg" => "get_qrels_jg: Cannot read qrels",
        other => {
            return Err(fail(
                err,
                &format!("trec_eval: Illegal rel_format '{other}'\n"),
                2,
            ))
        }
    };
    let Some(qrels_text) = std::fs::read(&qrels_path).ok().filter(|b| !b.is_empty()) else {
        let _ = writeln!(err, "trec_eval.{cannot_read} file '{qrels_path}'");
        return Err(quit(err, &qrels_path));
    };
    let qrels = match read_rel_info(&o.rel_format, &qrels_text) {
        Ok(q) => q,
        Err(message) => {
            let _ = writeln!(err, "trec_eval.{message}");
            return Err(quit(err, &qrels_path));
        }
    };
    if o.results_format != "trec_results" {
        return Err(fail(
            err,
            &format!(
                "trec_eval: Illegal retrieval results format '{}'\n",
                o.results_format
            ),
            2,
        ));
    }
    if !o.any_marked {
        mark_measure(&mut o, "official", err);
    }
    // The measures are set up before the run is read, to score its queries as they are read;
    // a message of theirs waits for its turn, after those of reading the run and z-scores.
    let mut init_err = Vec::new();
    let init = init_measures(&o, &mut init_err);
    // The queries to evaluate: every qrels query (trec_eval's order).
    let work: Vec<usize> = (0..qrels.len())
        .filter(|&i| {
            o.debug_query
                .as_ref()
                .is_none_or(|d| d.as_bytes() == qrels[i].qid)
        })
        .collect();
    let streamed = match &init {
        Ok((measures, num_values)) if !run_path.starts_with('-') => {
            let ctx = Context {
                o: &o,
                measures,
                num_values: *num_values,
                first_joining: first_joining(measures),
            };
            stream_run(&run_path, &ctx, &qrels, &work, block_bytes, threads)
        }
        _ => Streamed::NotGrouped,
    };
    let run_text;
    let (mut source, run_id) = match streamed {
        Streamed::Figures(figures, run_id) => (Source::Streamed(figures), run_id),
        Streamed::Malformed(line) => {
            let _ = writeln!(err, "trec_eval.get_results: Malformed line {line}");
            return Err(quit(err, &run_path));
        }
        Streamed::Unreadable => return Err(cannot_read_run(err, &run_path)),
        Streamed::NotGrouped => {
            run_text =
                read_file(&run_path, stdin).ok_or_else(|| cannot_read_run(err, &run_path))?;
            // Below a megabyte a thread costs more than it saves.
            let parsers = if run_text.len() > 1 << 20 { threads } else { 1 };
            match read_results(&run_text, parsers) {
                Ok(r) => {
                    let run_id = r.run_id.to_vec();
                    (Source::Whole(r), run_id)
                }
                Err(line) => {
                    let _ = writeln!(err, "trec_eval.get_results: Malformed line {line}");
                    return Err(quit(err, &run_path));
                }
            }
        }
    };
    let zscores = match &o.zscores {
        None => None,
        Some(path) => {
            let Some(text) = std::fs::read(path).ok().filter(|b| !b.is_empty()) else {
                return Err(fail(
                    err,
                    &format!("trec_eval.get_zscores: Cannot read zscores file '{path}'\n"),
                    255,
                ));
            };
            match read_zscores(&text) {
                Ok(z) => Some(z),
                Err(line) => {
                    return Err(fail(
                        err,
                        &format!("trec_eval.get_zscores: Malformed line {line}\n"),
                        255,
                    ))
                }
            }
        }
    };
    let _ = err.write_all(&init_err);
    let (measures, num_values) = init?;
    let ctx = Context {
        o: &o,
        measures: &measures,
        num_values,
        first_joining: first_joining(&measures),
    };

    // What trec_eval ranks for a query without results under -c: one document, score 1.
    let bogus_docs = || std::iter::once((&b"ceci_nest_pas_un_docno"[..], score_key(1.0)));
    let mut accum = vec![0.0; num_values];
    let mut num_queries = 0usize;
    let mut text: Vec<u8> = Vec::new();
    let mut scratch = Scratch::default();
    // Queries are taken in batches (computed on every core when the run was read whole) and
    // printed in order; a batch bounds the memory the figures take.
    for (b, batch) in work.chunks(BATCH).enumerate() {
        let computed: Vec<Computed> = match &mut source {
            Source::Whole(results) => {
                let results = &*results;
                let compute = |scratch: &mut _, &i: &usize| -> Computed {
                    Some(match results.query(qrels[i].qid) {
                        Some(r) => evaluate_query(&ctx, scratch, &qrels[i], results.docs(r), false),
                        None if o.complete => {
                            evaluate_query(&ctx, scratch, &qrels[i], bogus_docs(), true)
                        }
                        None => return None,
                    })
                };
                if threads > 1 && batch.len() >= 64 {
                    let per = batch.len().div_ceil(threads);
                    std::thread::scope(|s| {
                        let handles: Vec<_> = batch
                            .chunks(per)
                            .map(|part| {
                                s.spawn(move || {
                                    let mut scratch = Scratch::default();
                                    part.iter()
                                        .map(|w| compute(&mut scratch, w))
                                        .collect::<Vec<_>>()
                                })
                            })
                            .collect();
                        handles
                            .into_iter()
                            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                            .collect()
                    })
                } else {
                    batch.iter().map(|w| compute(&mut scratch, w)).collect()
                }
            }
            Source::Streamed(figures) => batch
                .iter()
                .zip(b * BATCH..)
                .map(|(&i, w)| match figures[w].take() {
                    Some(v) => Some(v),
                    None if o.complete => Some(evaluate_query(
                        &ctx,
                        &mut scratch,
                        &qrels[i],
                        bogus_docs(),
                        true,
                    )),
                    None => None,
                })
                .collect(),
        };
        for (&i, result) in batch.iter().zip(computed) {
            let qid = qrels[i].qid;
            let done = match result {
                None => {
                    let _ = out.write_all(&text);
                    return Err(fail(
                        err,
                        &format!(
                            "trec_eval: result qid '{}' not found in qrels\n",
                            String::from_utf8_lossy(qid)
                        ),
                        4,
                    ));
                }
                Some(Err(message)) => {
                    let _ = out.write_all(&text);
                    return Err(fail(err, &message, 4));
                }
                Some(Ok(v)) => v,
            };
            let mut values = done.values;
            if let Some(z) = &zscores {
                for req in &measures {
                    for (k, name) in req.names.iter().enumerate() {
                        let v = &mut values[req.slot + k];
                        *v = match z.get(&(qid.to_vec(), name.as_bytes().to_vec())) {
                            Some(&(mean, sd)) if sd != 0.0 => (*v - mean) / sd,
                            Some(&(mean, _)) if *v == mean => 0.0,
                            _ => MISSING_ZSCORE,
                        };
                    }
                }
            }
            for req in &measures {
                if req.def.print == P::Relstring || req.def.print == P::Runid {
                    continue;
                }
                for k in 0..req.names.len() {
                    accum[req.slot + k] += values[req.slot + k];
                }
            }
            if o.query {
                print_values(
                    &mut text,
                    &measures,
                    &values,
                    &done.relstring,
                    qid,
                    zscores.is_some(),
                );
            }
            num_queries += 1;
        }
        if text.len() > 1 << 16 {
            out.write_all(&text).map_err(|_| Exit(6))?;
            text.clear();
        }
    }
    if num_queries == 0 {
        let _ = out.write_all(&text);
        return Err(fail(
            err,
            "trec_eval: No queries with both results and relevance info\n",
            7,
        ));
    }
    // Averages (meas_avg.c): over the evaluated queries, or every qrels query with -c.
    let n = if o.complete { qrels.len() } else { num_queries };
    for req in &measures {
        let range = req.slot..req.slot + req.names.len();
        match req.def.average {
            A::Mean => {
                if n > 0 {
                    accum[range].iter_mut().for_each(|v| *v /= n as f64);
                }
            }
            A::GeometricMean => {
                let mut sum = accum[req.slot];
                if o.complete {
                    sum += (n - num_queries) as f64 * m::MIN_GEO_MEAN.ln();
                }
                accum[req.slot] = (sum / n as f64).exp();
            }
            A::NumQ => accum[req.slot] = n as f64,
            A::NumRel if o.complete => {
                accum[req.slot] = qrels
                    .iter()
                    .flat_map(|q| &q.docs)
                    .filter(|d| d.1 > 0)
                    .count() as f64;
            }
            A::NumRel | A::Sum | A::None => {}
        }
    }
    if o.summary {
        let z = zscores.is_some();
        for req in &measures {
            match req.def.print {
                P::Runid => {
                    let _ = write!(text, "{:<22}\tall\t", "runid");
                    text.extend_from_slice(&run_id);
                    text.push(b'\n');
                }
                P::Relstring => {}
                P::Long | P::SummaryLong if !z => {
                    let _ = writeln!(
                        text,
                        "{:<22}\tall\t{}",
                        req.names[0], accum[req.slot] as i64
                    );
                }
                _ => {
                    let prefix = if z { "Z" } else { "" };
                    for (k, name) in req.names.iter().enumerate() {
                        let _ = writeln!(
                            text,
                            "{prefix}{name:<22}\tall\t{}",
                            fixed(accum[req.slot + k])
                        );
                    }
                }
            }
        }
    }
    out.write_all(&text).map_err(|_| Exit(8))?;
    Ok(())
}

/// `-h`: the options and the measures, in rag-eval's words.
fn help() -> String {
    let mut s = String::from(
        "rag-eval trec_eval: trec_eval 10.0's command line, output and figures.\n\
         \n\
         trec_eval [-h] [-v] [-q] [-m measure[.params]]... [-c] [-n] [-l level] [-D level]\n\
         \x20         [-N num] [-M num] [-J] [-R format] [-T trec_results] [-Z zfile]\n\
         \x20         rel_info_file results_file\n\
         \n\
         results_file '-' reads the run from standard input.\n\
         \x20 -q  print every query's figures before the summary\n\
         \x20 -m  a measure or a set of them (official, set, all_trec, all_prefs, prefs,\n\
         \x20     qrels_jg), with parameters after a dot: P.5,10  ndcg.1=3,2=9\n\
         \x20     utility.2,-1,0,0  relstring.20\n\
         \x20 -c  average over every qrels query; a query without results scores 0\n\
         \x20 -n  no summary\n\
         \x20 -l  the lowest grade that is relevant (1)\n\
         \x20 -N  documents in the collection (for utility)\n\
         \x20 -M  only the first num documents of each query\n\
         \x20 -J  only the judged documents\n\
         \x20 -R  the judgements' format: qrels (default), prefs, qrels_prefs, qrels_jg\n\
         \x20 -Z  print z-scores from the means and deviations of zfile (qid measure mean sd)\n\
         \x20 -D  accepted; no debugging output\n\
         \n\
         Measures, in the order they print:\n",
    );
    for d in MEASURES {
        let params = match d.params {
            K::None => String::new(),
            K::Longs(c) => format!(
                " (cut-offs {})",
                c.iter()
                    .map(|k| k.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            K::Doubles(c) | K::DoubleParams(c) => format!(
                " (parameters {})",
                c.iter()
                    .map(|k| k.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            K::Pairs if d.name == "rbp_resid" => " (parameters p=0.9)".to_owned(),
            K::Pairs if d.name == "rbp" => " (parameters p=0.9,grade=gain,…)".to_owned(),
            K::Pairs => " (parameters grade=gain,…)".to_owned(),
        };
        s.push_str(&format!("  {}{params}\n", d.name));
    }
    s.push_str(
        "\nprefs_* read -R prefs (qid jg jsg docno level) or -R qrels_prefs (qrels, the\n\
         iteration column a judgement group); *_avgjg read -R qrels_jg (the same, each group\n\
         judging on its own); the others read -R qrels.\n",
    );
    s
}

/// Per-query figures of trec_eval measures ([`query_figures`]).
#[derive(Debug, Clone, PartialEq)]
pub struct QueryFigures {
    /// The names trec_eval prints for the measures, in its order (`bpref`, `P_5`, `infAP`).
    pub names: Vec<String>,
    /// The queries scored: those of the qrels that the run has, in trec_eval's order (by id).
    pub ids: Vec<String>,
    /// Per query (in the order of `ids`), one value per name.
    pub values: Vec<Vec<f64>>,
}

/// Scores `run` against `qrels` (the texts of trec_eval's files) with trec_eval's measures
/// named as `-m` takes them (`bpref`, `infAP`, `P.5,10`, `rbp.p=0.8`, `ndcg.1=3,2=9`), through
/// the same functions as [`run`]: the per-query figures `-q` prints, for the judged queries
/// the run has (the queries `rag-eval score --qrels` scores; a judged query without results is
/// left out, not an error). Measures that are a summary over queries rather than a figure of
/// each (`gm_map`, `gm_bpref`, `num_q`, `runid`, `relstring`) are refused, as is any name
/// `run` refuses; the error is trec_eval's message.
///
/// ```
/// use rag_eval::trec::trec_eval::query_figures;
///
/// let qrels = b"q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\n";
/// let run = b"q1 Q0 d2 1 0.9 r\nq1 Q0 d1 2 0.8 r\nq3 Q0 d3 1 1 r\n";
/// let f = query_figures(qrels, run, &["bpref", "P.1"]).unwrap();
/// assert_eq!(f.names, ["bpref", "P_1"]);
/// assert_eq!(f.ids, ["q1"]); // q2 has no results, q3 no judgements
/// assert_eq!(f.values, [[0.0, 0.0]]);
/// assert!(query_figures(qrels, run, &["gm_map"]).is_err());
/// ```
pub fn query_figures(
    qrels: &[u8],
    run: &[u8],
    measures: &[&str],
) -> std::result::Result<QueryFigures, String> {
    let mut err: Vec<u8> = Vec::new();
    let text = |err: &[u8]| String::from_utf8_lossy(err).trim_end().to_owned();
    let args: Vec<String> = measures
        .iter()
        .flat_map(|m| ["-m".to_owned(), (*m).to_owned()])
        .collect();
    let Ok(o) = parse_options(&args, &mut err) else {
        return Err(text(&err));
    };
    let Ok((requested, num_values)) = init_measures(&o, &mut err) else {
        return Err(text(&err));
    };
    if let Some(req) = requested
        .iter()
        .find(|r| r.def.print != P::Long && r.def.print != P::Double)
    {
        return Err(format!(
            "trec_eval: measure '{}' is not a figure of each query (a summary over queries, or text)",
            req.def.name
        ));
    }
    let qrels =
        read_qrels(qrels).map_err(|line| format!("trec_eval.get_qrels: Malformed line {line}"))?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let parsers = if run.len() > 1 << 20 { threads } else { 1 };
    let results = read_results(run, parsers)
        .map_err(|line| format!("trec_eval.get_results: Malformed line {line}"))?;
    let ctx = Context {
        o: &o,
        measures: &requested,
        num_values,
        first_joining: requested.first().map(|r| r.def.name),
    };
    let mut scratch = Scratch::default();
    let mut out = QueryFigures {
        names: requested
            .iter()
            .flat_map(|r| r.names.iter().cloned())
            .collect(),
        ids: Vec::new(),
        values: Vec::new(),
    };
    for q in &qrels {
        let Some(r) = results.query(q.qid) else {
            continue;
        };
        let v = evaluate_query(&ctx, &mut scratch, q, results.docs(r), false)
            .map_err(|e| e.trim_end().to_owned())?;
        out.ids.push(String::from_utf8_lossy(q.qid).into_owned());
        out.values.push(v.values);
    }
    Ok(out)
}

/// The `-m` argument of a trec_eval measure named as trec_eval prints it or as `-m` takes it:
/// `bpref`, `rbp.p=0.8` as they are, `success_5` as `success.5`, `iprec_at_recall_0.10` as
/// `iprec_at_recall.0.10`; `None` when no trec_eval measure has that name.
///
/// ```
/// use rag_eval::trec::trec_eval::measure_argument;
/// assert_eq!(measure_argument("infAP").as_deref(), Some("infAP"));
/// assert_eq!(measure_argument("map_cut_10").as_deref(), Some("map_cut.10"));
/// assert_eq!(measure_argument("Rprec_mult_0.20").as_deref(), Some("Rprec_mult.0.20"));
/// assert_eq!(measure_argument("precision@5"), None);
/// ```
pub fn measure_argument(name: &str) -> Option<String> {
    let known = |n: &str| MEASURES.iter().any(|d| d.name == n);
    let base = name.split_once('.').map_or(name, |(b, _)| b);
    if known(base) {
        return Some(name.to_owned());
    }
    let (base, suffix) = name.rsplit_once('_')?;
    (known(base) && !suffix.is_empty()).then(|| format!("{base}.{suffix}"))
}
