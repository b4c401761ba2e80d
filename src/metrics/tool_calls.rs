//! Agent metrics: the tool calls a system made against the calls it should have made.
//!
//! Every function here is a pure function of two lists of [`ToolCall`]s, exact against the
//! implementation it names (ragas 0.4.3's `ToolCallAccuracy` and `ToolCallF1`, promptfoo's
//! `trajectory:tool-sequence` and `trajectory:tool-args-match`), except for the empty case,
//! which every one of them states the same way:
//!
//! - no call expected and none made: nothing to compare, the figure is missing (`None`);
//! - calls expected and none made: 0 (as ragas scores it);
//! - calls made where none were expected: 0 (a failure).
//!
//! ```
//! use rag_eval::metrics::tool_calls::{tool_call_accuracy, Order, ToolCall};
//! use serde_json::json;
//! let made = [ToolCall::new("search", json!({"q": "larkspur"}))];
//! let expected = [ToolCall::new("search", json!({"q": "larkspur", "k": 3}))];
//! // One of the two expected arguments matches.
//! assert_eq!(tool_call_accuracy(&made, &expected, Order::Strict), Some(0.5));
//! assert_eq!(tool_call_accuracy(&[], &[], Order::Strict), None);
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// One call of a tool: its name and its arguments (a JSON object), with the id a transcript
/// gives it (which the metrics ignore: ids differ between a run and its reference).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, when the transcript gives one (a tool turn answers it by this id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments, by name.
    #[serde(default)]
    pub args: Map<String, Value>,
}

impl ToolCall {
    /// A call without an id. `args` is taken as an object; any other value gives no arguments.
    pub fn new(name: impl Into<String>, args: Value) -> ToolCall {
        let args = match args {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        ToolCall {
            id: None,
            name: name.into(),
            args,
        }
    }
}

/// Whether `tool_call_accuracy` holds the calls to the reference's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The calls must come in the reference's order (ragas' `strict_order=True`, its default).
    Strict,
    /// Any order: both lists are sorted before they are compared (`strict_order=False`).
    Flexible,
}

/// The empty cases every metric here shares: `Some(figure)` decides the case, `None` lets
/// the metric compute.
fn empty_case(made: usize, expected: usize) -> Option<Option<f64>> {
    match (made, expected) {
        (0, 0) => Some(None),
        (0, _) | (_, 0) => Some(Some(0.0)),
        _ => None,
    }
}

/// ragas' `ToolCallAccuracy` (`ragas/metrics/_tool_call_accuracy.py`): 0 unless the names of
/// the calls made equal the reference's, in order ([`Order::Strict`]) or as sorted lists
/// ([`Order::Flexible`], both sorted by name then each argument's name and value); otherwise
/// the mean over reference calls of the share of the reference call's arguments the paired
/// call gives with the same value. Values are compared as Python's `str()` writes them
/// (`1` and `"1"` agree, `1` and `1.0` do not). A call and its reference with no arguments
/// score 1; a call with arguments against a reference with none scores 0.
///
/// ragas' coverage penalty (the compared share when the lists differ in length) never acts:
/// lists of different lengths never have equal names, so they score 0 before it applies.
/// The empty cases are the module's; ragas scores no call expected and none made 1.
pub fn tool_call_accuracy(made: &[ToolCall], expected: &[ToolCall], order: Order) -> Option<f64> {
    if let Some(v) = empty_case(made.len(), expected.len()) {
        return v;
    }
    let mut made: Vec<&ToolCall> = made.iter().collect();
    let mut expected: Vec<&ToolCall> = expected.iter().collect();
    if order == Order::Flexible {
        // Python sorts tuples of strings by code point, as Rust sorts `Vec<String>`; the
        // sort is stable in both.
        made.sort_by_cached_key(|c| sort_key(c));
        expected.sort_by_cached_key(|c| sort_key(c));
    }
    let names_equal =
        made.len() == expected.len() && made.iter().zip(&expected).all(|(m, e)| m.name == e.name);
    if !names_equal {
        return Some(0.0);
    }
    let total: f64 = made
        .iter()
        .zip(&expected)
        .map(|(m, e)| argument_share(&m.args, &e.args))
        .sum();
    Some(total / expected.len() as f64)
}

/// The share of `expected`'s arguments `made` gives with the same `str()` (ragas'
/// `_get_arg_score` with its default `ExactMatch`).
fn argument_share(made: &Map<String, Value>, expected: &Map<String, Value>) -> f64 {
    if expected.is_empty() {
        return if made.is_empty() { 1.0 } else { 0.0 };
    }
    let same = expected
        .iter()
        .filter(|(k, v)| made.get(*k).is_some_and(|m| py_str(m) == py_str(v)))
        .count();
    same as f64 / expected.len() as f64
}

/// ragas' `_sorted_key_for_tool_call`: the name, then each argument's name and `str()` value
/// in name order.
fn sort_key(c: &ToolCall) -> Vec<String> {
    let mut key = vec![c.name.clone()];
    // A JSON object's keys are unique and serde_json keeps them sorted.
    for (k, v) in &c.args {
        key.push(k.clone());
        key.push(py_str(v));
    }
    key
}

/// ragas' `ToolCallF1` (`ragas/metrics/_tool_call_f1.py`): the calls made and the reference
/// calls as sets of (name, arguments), repeats collapsing; F1 of the set made against the
/// reference set, rounded to four decimal places as ragas rounds it. Arguments are equal as
/// Python compares the parsed JSON: numbers by value (`1`, `1.0` and `true` are one value),
/// objects whatever their key order, lists in order.
///
/// The empty cases are the module's; ragas scores no call expected and none made 0.
pub fn tool_call_f1(made: &[ToolCall], expected: &[ToolCall]) -> Option<f64> {
    if let Some(v) = empty_case(made.len(), expected.len()) {
        return v;
    }
    let made = distinct(made);
    let expected = distinct(expected);
    let tp = made
        .iter()
        .filter(|m| expected.iter().any(|e| same_call(m, e)))
        .count() as f64;
    let fp = made.len() as f64 - tp;
    let fn_ = expected.len() as f64 - tp;
    let precision = tp / (tp + fp);
    let recall = tp / (tp + fn_);
    let f1 = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    Some(round4(f1))
}

/// Python's `round(x, 4)`: to the nearest of the decimal numbers with four places, the
/// binary value rounded correctly (Rust's formatting rounds the exact value too).
fn round4(x: f64) -> f64 {
    format!("{x:.4}").parse().unwrap_or(x)
}

/// The calls as a set: the first of each group of equal calls.
fn distinct(calls: &[ToolCall]) -> Vec<&ToolCall> {
    let mut out: Vec<&ToolCall> = Vec::with_capacity(calls.len());
    for c in calls {
        if !out.iter().any(|o| same_call(o, c)) {
            out.push(c);
        }
    }
    out
}

fn same_call(a: &ToolCall, b: &ToolCall) -> bool {
    a.name == b.name
        && a.args.len() == b.args.len()
        && a.args
            .iter()
            .all(|(k, v)| b.args.get(k).is_some_and(|w| py_eq(v, w)))
}

/// Python's `==` on values parsed from JSON: `bool` is a kind of `int`, so `true == 1 == 1.0`.
fn py_eq(a: &Value, b: &Value) -> bool {
    match (py_number(a), py_number(b)) {
        (Some(x), Some(y)) => return x == y,
        (Some(_), None) | (None, Some(_)) => return false,
        (None, None) => {}
    }
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| py_eq(v, w))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| py_eq(v, w)))
        }
        _ => a == b,
    }
}

/// A number or a boolean as Python compares it. Integers beyond 2^53 lose digits here, as
/// they would against a float in Python only.
fn py_number(v: &Value) -> Option<f64> {
    match v {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

/// Python's `str()` of a value parsed from JSON: strings as they are, everything else as
/// `repr()` writes it (`True`, `None`, `1.0`, `1e-05`, `['a', 1]`, `{'k': 'v'}`).
pub(crate) fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        _ => {
            let mut out = String::new();
            py_repr(v, &mut out);
            out
        }
    }
}

fn py_repr(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => {
                let _ = write!(out, "{i}");
            }
            (None, Some(u), _) => {
                let _ = write!(out, "{u}");
            }
            (None, None, Some(f)) => out.push_str(&py_float(f)),
            (None, None, None) => out.push_str(&n.to_string()),
        },
        Value::String(s) => py_str_repr(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                py_repr(item, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                py_str_repr(k, out);
                out.push_str(": ");
                py_repr(item, out);
            }
            out.push('}');
        }
    }
}

/// Python's `repr()` of a float: the shortest digits that read back to it, in positional
/// notation when the decimal exponent is in -5..16 (with `.0` when whole), else scientific
/// with a signed exponent of at least two digits (`1e-05`, `1.5e+16`).
fn py_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    // `{:e}` gives the shortest round-trip digits: `-1.25e-7`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..16).contains(&exp) {
        let s = format!("{f}");
        if s.contains('.') {
            s
        } else {
            format!("{s}.0")
        }
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

/// Python's `repr()` of a string: single quotes unless the text holds one and no double
/// quote; backslashes, that quote and control characters escaped.
fn py_str_repr(s: &str, out: &mut String) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || (0x7f..0xa0).contains(&(c as u32)) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// How `tool_sequence` compares the names of the calls made with the reference's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sequence {
    /// The same names in the same order, nothing more (promptfoo's `mode: exact`).
    Exact,
    /// The reference's names appear in order among the calls made, others allowed between
    /// them (promptfoo's `mode: in_order`, its default).
    InOrder,
}

/// promptfoo's `trajectory:tool-sequence` (`src/assertions/trajectory.ts`,
/// `handleTrajectoryToolSequence`), with tool names for its step matchers: 1 when the calls
/// made follow the reference's names as `mode` asks, else 0. `InOrder` matches greedily, each
/// call made against the next name still expected.
///
/// promptfoo refuses an empty expected sequence; here it is the module's empty case (missing
/// when no call was made, 0 when some were).
pub fn tool_sequence(made: &[ToolCall], expected: &[ToolCall], mode: Sequence) -> Option<f64> {
    if let Some(v) = empty_case(made.len(), expected.len()) {
        return v;
    }
    let pass = match mode {
        Sequence::Exact => {
            made.len() == expected.len() && made.iter().zip(expected).all(|(m, e)| m.name == e.name)
        }
        Sequence::InOrder => {
            let mut next = 0;
            for m in made {
                if next < expected.len() && m.name == expected[next].name {
                    next += 1;
                }
            }
            next == expected.len()
        }
    };
    Some(if pass { 1.0 } else { 0.0 })
}

/// How `tool_args_match` compares a call's arguments with the reference's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Args {
    /// Every expected argument is given with a matching value; others are allowed. Objects
    /// match the same way inside, lists element by element at equal length (promptfoo's
    /// `mode: partial`, its default).
    Partial,
    /// The arguments equal the reference's (promptfoo's `mode: exact`).
    Exact,
}

/// promptfoo's `trajectory:tool-args-match` (`src/assertions/trajectory.ts`,
/// `handleTrajectoryToolArgsMatch`) over every reference call: the share of reference calls
/// for which some call made to the same tool has matching arguments (promptfoo's assertion,
/// which passes or fails for one expected call, averaged over the reference). Values compare
/// as JavaScript's `isDeepStrictEqual` compares the parsed JSON: numbers by value (`1` and
/// `1.0` agree, `true` and `1` do not), objects whatever their key order.
///
/// The empty cases are the module's (promptfoo asserts one expected call at a time).
pub fn tool_args_match(made: &[ToolCall], expected: &[ToolCall], mode: Args) -> Option<f64> {
    if let Some(v) = empty_case(made.len(), expected.len()) {
        return v;
    }
    let matched = expected
        .iter()
        .filter(|e| {
            made.iter().any(|m| {
                m.name == e.name
                    && match mode {
                        Args::Exact => js_eq(&m.args, &e.args),
                        Args::Partial => js_partial_object(&m.args, &e.args),
                    }
            })
        })
        .count();
    Some(matched as f64 / expected.len() as f64)
}

fn js_eq(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|(k, v)| b.get(k).is_some_and(|w| js_value_eq(v, w)))
}

/// `isDeepStrictEqual` on parsed JSON: numbers by value, the rest structurally.
fn js_value_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| js_value_eq(v, w))
        }
        (Value::Object(x), Value::Object(y)) => js_eq(x, y),
        _ => a == b,
    }
}

/// promptfoo's `matchesExpectedArgsPartial` for an object: every expected key present in
/// `actual` with a partially matching value.
fn js_partial_object(actual: &Map<String, Value>, expected: &Map<String, Value>) -> bool {
    expected
        .iter()
        .all(|(k, e)| actual.get(k).is_some_and(|a| js_partial(a, e)))
}

fn js_partial(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Array(a), Value::Array(e)) => {
            a.len() == e.len() && a.iter().zip(e).all(|(x, y)| js_partial(x, y))
        }
        (_, Value::Array(_)) => false,
        (Value::Object(a), Value::Object(e)) => js_partial_object(a, e),
        (_, Value::Object(_)) => false,
        _ => js_value_eq(actual, expected),
    }
}

/// Whether `steps` is within the bar `max_steps`: 1 when at most, 0 when over, missing
/// without a bar.
pub fn within_max(steps: usize, max_steps: Option<usize>) -> Option<f64> {
    max_steps.map(|max| if steps <= max { 1.0 } else { 0.0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall::new(name, args)
    }

    #[test]
    fn python_str_of_json_values() {
        let cases = [
            (json!("a"), "a"),
            (json!(1), "1"),
            (json!(-3), "-3"),
            (json!(1.0), "1.0"),
            (json!(0.1), "0.1"),
            (json!(1e-5), "1e-05"),
            (json!(0.0001), "0.0001"),
            (json!(1e16), "1e+16"),
            (json!(1e15), "1000000000000000.0"),
            (json!(1.5e-7), "1.5e-07"),
            (json!(true), "True"),
            (json!(null), "None"),
            (json!(["a", 1, [false]]), "['a', 1, [False]]"),
            (
                json!({"k": "it's", "n": null}),
                "{'k': \"it's\", 'n': None}",
            ),
            (json!(["a\\b\n"]), "['a\\\\b\\n']"),
        ];
        for (v, want) in cases {
            assert_eq!(py_str(&v), want, "{v}");
        }
    }

    #[test]
    fn round4_is_pythons_round() {
        // Python: round(2/3, 4) == 0.6667, round(0.03125, 4) == 0.0312 (the binary value
        // is exactly halfway; ties go to even), round(0.12345, 4) == 0.1235 (just above).
        assert_eq!(round4(2.0 / 3.0), 0.6667);
        assert_eq!(round4(0.03125), 0.0312);
        assert_eq!(round4(0.12345), 0.1235);
    }

    #[test]
    fn empty_cases() {
        let one = [call("a", json!({}))];
        for f in [
            |m: &[ToolCall], e: &[ToolCall]| tool_call_accuracy(m, e, Order::Strict),
            |m: &[ToolCall], e: &[ToolCall]| tool_call_accuracy(m, e, Order::Flexible),
            tool_call_f1,
            |m: &[ToolCall], e: &[ToolCall]| tool_sequence(m, e, Sequence::Exact),
            |m: &[ToolCall], e: &[ToolCall]| tool_sequence(m, e, Sequence::InOrder),
            |m: &[ToolCall], e: &[ToolCall]| tool_args_match(m, e, Args::Partial),
            |m: &[ToolCall], e: &[ToolCall]| tool_args_match(m, e, Args::Exact),
        ] {
            assert_eq!(f(&[], &[]), None);
            assert_eq!(f(&[], &one), Some(0.0));
            assert_eq!(f(&one, &[]), Some(0.0));
            assert_eq!(f(&one, &one), Some(1.0));
        }
    }

    #[test]
    fn promptfoo_sequences() {
        // Worked from handleTrajectoryToolSequence: in_order walks the calls made once,
        // advancing on each name that is the next expected one.
        let made = [
            call("search", json!({})),
            call("open", json!({})),
            call("search", json!({})),
            call("answer", json!({})),
        ];
        let want = [call("search", json!({})), call("answer", json!({}))];
        assert_eq!(tool_sequence(&made, &want, Sequence::InOrder), Some(1.0));
        assert_eq!(tool_sequence(&made, &want, Sequence::Exact), Some(0.0));
        let reversed = [call("answer", json!({})), call("search", json!({}))];
        assert_eq!(
            tool_sequence(&made, &reversed, Sequence::InOrder),
            Some(0.0)
        );
        assert_eq!(tool_sequence(&made, &made, Sequence::Exact), Some(1.0));
    }

    #[test]
    fn promptfoo_args() {
        // Worked from matchesExpectedArgsPartial and isDeepStrictEqual.
        let made = [call(
            "search",
            json!({"q": "x", "k": 3.0, "filter": {"lang": "en", "year": 2024}, "tags": ["a", "b"]}),
        )];
        let partial = [call("search", json!({"k": 3, "filter": {"lang": "en"}}))];
        assert_eq!(tool_args_match(&made, &partial, Args::Partial), Some(1.0));
        assert_eq!(tool_args_match(&made, &partial, Args::Exact), Some(0.0));
        // Lists match element by element at equal length, even in partial mode.
        let fewer_tags = [call("search", json!({"tags": ["a"]}))];
        assert_eq!(
            tool_args_match(&made, &fewer_tags, Args::Partial),
            Some(0.0)
        );
        // Exact ignores key order and compares numbers by value.
        let same = [call(
            "search",
            json!({"tags": ["a", "b"], "filter": {"year": 2024, "lang": "en"}, "k": 3, "q": "x"}),
        )];
        assert_eq!(tool_args_match(&made, &same, Args::Exact), Some(1.0));
        // A boolean is not a number in JavaScript.
        let flag = [call("f", json!({"x": 1}))];
        assert_eq!(
            tool_args_match(&[call("f", json!({"x": true}))], &flag, Args::Exact),
            Some(0.0)
        );
        // Two reference calls, one matched: the mean of the two assertions.
        let two = [
            call("search", json!({"q": "x"})),
            call("calc", json!({"expr": "1+1"})),
        ];
        assert_eq!(tool_args_match(&made, &two, Args::Partial), Some(0.5));
    }

    #[test]
    fn max_steps_bar() {
        assert_eq!(within_max(3, Some(3)), Some(1.0));
        assert_eq!(within_max(4, Some(3)), Some(0.0));
        assert_eq!(within_max(4, None), None);
    }
}
