//! Rewriting a dataset row without losing what rag-eval does not read.
//!
//! A row may carry fields rag-eval has no use for: a `split` at the top, a `lang` under
//! `inputs`, a `page` inside a span. A tool that rewrites a dataset (re-anchoring,
//! generation's final pass) must hand them back: a row that did not change is written as the
//! bytes it was read from, and a changed row is the original with only the changed fields
//! replaced, every other field (known or not) in its place and its original spelling.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// A JSON object's fields in file order, each value as the bytes it was written with.
struct Fields(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Fields, A::Error> {
                let mut v = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    v.push((k, m.next_value::<Box<RawValue>>()?));
                }
                Ok(Fields(v))
            }
        }
        d.deserialize_map(V)
    }
}

/// Which fields of an object rag-eval writes itself; the rest are kept as found.
#[derive(Clone, Copy)]
enum Shape {
    /// A value replaced as a whole when it changed.
    Leaf,
    /// An object whose fields named here are rag-eval's (with their own shapes); any other
    /// field is the user's and stays. `None` as the list: every field is rag-eval's.
    Object(Option<&'static [(&'static str, Shape)]>),
    /// An array whose elements have the given shape, matched by position.
    Array(&'static Shape),
}

const SPAN: Shape = Shape::Object(Some(&[
    ("doc_id", Shape::Leaf),
    ("start", Shape::Leaf),
    ("end", Shape::Leaf),
    ("text", Shape::Leaf),
]));

const ROW: Shape = Shape::Object(Some(&[
    ("id", Shape::Leaf),
    ("inputs", Shape::Object(Some(&[("query", Shape::Leaf)]))),
    (
        "outputs",
        Shape::Object(Some(&[
            ("relevant_spans", Shape::Array(&SPAN)),
            ("relevant_chunk_ids", Shape::Leaf),
            ("reference_answer", Shape::Leaf),
        ])),
    ),
    // Metadata is read whole, so every key in it is known.
    ("metadata", Shape::Object(None)),
]));

/// The row `new` (as rag-eval writes it) laid over `original` (a line read from a dataset):
/// fields rag-eval does not know are kept in place and values that did not change keep their
/// original bytes. Deciding that a row did not change at all (and writing `original` as it
/// is) is the caller's part, since only it knows what the row meant.
pub(crate) fn overlay(original: &str, new: &Value) -> String {
    let mut out = String::with_capacity(original.len() + 64);
    merge(original, new, ROW, &mut out);
    out
}

/// Writes `new` over the raw JSON `old` in the given shape.
fn merge(old: &str, new: &Value, shape: Shape, out: &mut String) {
    let unchanged = serde_json::from_str::<Value>(old).ok().as_ref() == Some(new);
    match (shape, new) {
        _ if unchanged => out.push_str(old.trim()),
        (Shape::Object(known), Value::Object(map)) => {
            let Ok(Fields(fields)) = serde_json::from_str::<Fields>(old) else {
                out.push_str(&new.to_string());
                return;
            };
            let shape_of = |key: &str| match known {
                None => Some(Shape::Leaf),
                Some(list) => list.iter().find(|(k, _)| *k == key).map(|(_, s)| *s),
            };
            out.push('{');
            let mut first = true;
            let mut sep = |out: &mut String| {
                if !std::mem::take(&mut first) {
                    out.push(',');
                }
            };
            for (key, raw) in &fields {
                match shape_of(key) {
                    // The user's field.
                    None => {
                        sep(out);
                        push_key(key, out);
                        out.push_str(raw.get());
                    }
                    Some(s) => {
                        // A known field rag-eval no longer writes is gone.
                        if let Some(v) = map.get(key) {
                            sep(out);
                            push_key(key, out);
                            merge(raw.get(), v, s, out);
                        }
                    }
                }
            }
            for (key, v) in map {
                if !fields.iter().any(|(k, _)| k == key) {
                    sep(out);
                    push_key(key, out);
                    out.push_str(&v.to_string());
                }
            }
            out.push('}');
        }
        (Shape::Array(elem), Value::Array(items)) => {
            let Ok(old_items) = serde_json::from_str::<Vec<Box<RawValue>>>(old) else {
                out.push_str(&new.to_string());
                return;
            };
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                match old_items.get(i) {
                    Some(raw) => merge(raw.get(), v, *elem, out),
                    None => out.push_str(&v.to_string()),
                }
            }
            out.push(']');
        }
        _ => out.push_str(&new.to_string()),
    }
}

fn push_key(key: &str, out: &mut String) {
    out.push_str(&Value::String(key.to_owned()).to_string());
    out.push(':');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_span_keeps_the_fields_around_it() {
        let line = r#"{"id":"q1","split":"test","inputs":{"query":"x","lang":"de"},"outputs":{"reference_answer":"A  b","relevant_spans":[{"doc_id":"a","page":3,"start":0,"end":2,"text":"ab"},{"doc_id":"b","start":1,"end":2}]},"metadata":{"z":1.50,"a":true},"extra":{"n":[1,2]}}"#;
        let new = serde_json::json!({"id":"q1","inputs":{"query":"x"},
            "outputs":{"relevant_spans":[{"doc_id":"a","start":5,"end":7,"text":"ab"},{"doc_id":"b","start":1,"end":2}],"reference_answer":"A  b"},
            "metadata":{"a":true,"z":1.5}});
        assert_eq!(
            overlay(line, &new),
            r#"{"id":"q1","split":"test","inputs":{"query":"x","lang":"de"},"outputs":{"reference_answer":"A  b","relevant_spans":[{"doc_id":"a","page":3,"start":5,"end":7,"text":"ab"},{"doc_id":"b","start":1,"end":2}]},"metadata":{"z":1.50,"a":true},"extra":{"n":[1,2]}}"#
        );
    }

    #[test]
    fn known_fields_removed_or_added_follow_the_new_row() {
        let line = r#"{"id":"q1","inputs":{"query":"x"},"outputs":{"relevant_spans":[{"doc_id":"a","start":0,"end":2,"text":"ab","k":0}]},"metadata":{"old":1,"keep":2}}"#;
        let new = serde_json::json!({"id":"q1","inputs":{"query":"x"},
            "outputs":{"relevant_spans":[{"doc_id":"a","start":0,"end":3},{"doc_id":"c","start":0,"end":1}]},
            "metadata":{"keep":2,"new":3}});
        assert_eq!(
            overlay(line, &new),
            r#"{"id":"q1","inputs":{"query":"x"},"outputs":{"relevant_spans":[{"doc_id":"a","start":0,"end":3,"k":0},{"doc_id":"c","end":1,"start":0}]},"metadata":{"keep":2,"new":3}}"#
        );
    }
}
