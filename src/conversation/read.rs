//! Reading conversations from JSONL: rag-eval's format, ragas' `MultiTurnSample` and
//! deepeval's `ConversationalTestCase`, one a line, the format told by the first line.

use super::{Conversation, Role, ToolCall, Turn};
use crate::answers::kind;
use crate::error::{Error, Result};
use crate::span::CharSpan;
use camino::Utf8PathBuf;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;
use std::io::BufRead;

/// The format of a conversations file, told by its first line and held by every other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// rag-eval's own: `{"id", "turns":[{"role","content",…}], "reference_tool_calls",…}`.
    RagEval,
    /// ragas' `MultiTurnSample` as `EvaluationDataset.to_jsonl` writes it:
    /// `{"user_input":[{"content","type":"human"|"ai"|"tool","tool_calls"}],…}`.
    Ragas,
    /// deepeval's `ConversationalTestCase` as JSON: `{"turns":[{"role","content",
    /// "tools_called","retrieval_context"}],"expected_outcome",…}`, without an `id`.
    Deepeval,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::RagEval => "rag-eval's conversation format",
            Format::Ragas => "ragas' MultiTurnSample",
            Format::Deepeval => "deepeval's ConversationalTestCase",
        })
    }
}

/// Fields only rag-eval's format has at the top of a line: a line with `turns`, one of these
/// and no `id` is a rag-eval conversation missing its id, not a deepeval test case.
const OWN_FIELDS: [&str; 4] = [
    "reference_tool_calls",
    "reference_outcome",
    "reference_topics",
    "max_steps",
];

impl Format {
    /// The format a line's object is in, or `None` when it is in none.
    fn of(obj: &Map<String, Value>) -> Option<Format> {
        if obj.contains_key("user_input") {
            Some(Format::Ragas)
        } else if !obj.contains_key("turns") {
            None
        } else if obj.contains_key("id") || OWN_FIELDS.iter().any(|f| obj.contains_key(*f)) {
            Some(Format::RagEval)
        } else {
            Some(Format::Deepeval)
        }
    }
}

/// Reads conversations one line at a time, checking each ([`Conversation`]'s rules: a tool
/// result follows a tool call, roles are known, calls have names, ids are unique). Blank
/// lines and a leading byte order mark are skipped. After an error it yields nothing more.
pub struct Reader<R> {
    input: R,
    path: Utf8PathBuf,
    line: usize,
    buf: String,
    format: Option<(Format, usize)>,
    seen: HashMap<String, usize>,
    done: bool,
}

impl<R: BufRead> Reader<R> {
    /// A reader of `input`; `path` names it in messages.
    pub fn new(input: R, path: Utf8PathBuf) -> Self {
        Reader {
            input,
            path,
            line: 0,
            buf: String::new(),
            format: None,
            seen: HashMap::new(),
            done: false,
        }
    }

    /// The format of the lines read so far (`None` before the first).
    pub fn format(&self) -> Option<Format> {
        self.format.map(|(f, _)| f)
    }

    fn err(&self, message: String) -> Error {
        Error::Parse {
            path: self.path.clone(),
            line: self.line,
            message,
        }
    }

    fn next_line(&mut self) -> Option<Result<Conversation>> {
        loop {
            self.buf.clear();
            match self.input.read_line(&mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    self.line += 1;
                    return Some(Err(self.err("not valid UTF-8".into())));
                }
                Err(source) => {
                    return Some(Err(Error::Io {
                        action: "read",
                        path: self.path.clone(),
                        source,
                    }))
                }
            }
            self.line += 1;
            let text = if self.line == 1 {
                crate::fs::strip_bom(&self.buf)
            } else {
                &self.buf
            };
            if !text.trim().is_empty() {
                let read = self.read(text.to_owned());
                return Some(read.map_err(|m| self.err(m)));
            }
        }
    }

    fn read(&mut self, text: String) -> std::result::Result<Conversation, String> {
        // The line is the file's: serde's "line 1" would only confuse.
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| e.to_string().replace(" at line 1 column ", " at column "))?;
        let Value::Object(obj) = value else {
            return Err(format!(
                "is {}, expected a conversation object",
                kind(&value)
            ));
        };
        let Some(format) = Format::of(&obj) else {
            return Err("a conversation has `turns` (rag-eval's format, deepeval's) or `user_input` (ragas')".into());
        };
        match self.format {
            None => self.format = Some((format, self.line)),
            Some((first, line)) if first != format => {
                return Err(format!(
                    "reads as {format}, but line {line} read as {first}: a file holds one format"
                ))
            }
            Some(_) => {}
        }
        let c = match format {
            Format::RagEval => own(obj, self.line)?,
            Format::Ragas => ragas(obj, self.line)?,
            Format::Deepeval => deepeval(obj, self.line)?,
        };
        check(&c)?;
        if let Some(first) = self.seen.get(&c.id) {
            return Err(format!(
                "conversation `{}` appears again (first on line {first})",
                c.id
            ));
        }
        self.seen.insert(c.id.clone(), self.line);
        Ok(c)
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Conversation>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = self.next_line();
        self.done = !matches!(next, Some(Ok(_)));
        next
    }
}

/// The rules every format's conversations keep: there is a turn; a tool result follows an
/// assistant turn that called tools, or another result (ragas' rule), and the call it names
/// was made before it; only assistant turns call tools, retrieve and have references.
fn check(c: &Conversation) -> std::result::Result<(), String> {
    if c.turns.is_empty() {
        return Err("the conversation has no turns".into());
    }
    let mut ids: Vec<&str> = Vec::new();
    for (i, t) in c.turns.iter().enumerate() {
        let at = format!("`turns[{i}]`");
        if t.role != Role::Assistant {
            let extra = [
                (!t.tool_calls.is_empty(), "`tool_calls`"),
                (!t.contexts.is_empty(), "`contexts`"),
                (t.reference_answer.is_some(), "`reference_answer`"),
                (t.relevant_spans.is_some(), "`relevant_spans`"),
            ];
            if let Some((_, field)) = extra.iter().find(|(has, _)| *has) {
                return Err(format!(
                    "{at}: a {} turn has {field}: only assistant turns call tools, retrieve or have references",
                    t.role.as_str()
                ));
            }
        }
        if t.role != Role::Tool && t.tool_call_id.is_some() {
            return Err(format!(
                "{at}: a {} turn has `tool_call_id`: only tool turns answer calls",
                t.role.as_str()
            ));
        }
        match t.role {
            Role::Assistant => ids.extend(t.tool_calls.iter().filter_map(|c| c.id.as_deref())),
            Role::Tool => {
                let after_call = i > 0
                    && match &c.turns[i - 1] {
                        p if p.role == Role::Tool => true,
                        p => p.role == Role::Assistant && !p.tool_calls.is_empty(),
                    };
                if !after_call {
                    return Err(format!(
                        "{at}: a tool result with no tool call before it (a tool turn follows an assistant turn with `tool_calls`, or another tool turn)"
                    ));
                }
                if let Some(id) = &t.tool_call_id {
                    if !ids.contains(&id.as_str()) {
                        return Err(format!(
                            "{at}: `tool_call_id` `{id}` names no tool call made before it"
                        ));
                    }
                }
            }
            Role::User => {}
        }
    }
    Ok(())
}

/// Takes field `name` of `obj` as a string, if present and not null.
fn string(
    obj: &mut Map<String, Value>,
    name: &str,
    at: &str,
) -> std::result::Result<Option<String>, String> {
    match obj.remove(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!(
            "{at}`{name}` is {}, expected a string",
            kind(&other)
        )),
    }
}

/// Takes field `name` of `obj` as a list, if present and not null.
fn list(
    obj: &mut Map<String, Value>,
    name: &str,
    at: &str,
) -> std::result::Result<Option<Vec<Value>>, String> {
    match obj.remove(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => Ok(Some(items)),
        Some(other) => Err(format!("{at}`{name}` is {}, expected a list", kind(&other))),
    }
}

fn object(v: Value, at: &str) -> std::result::Result<Map<String, Value>, String> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(format!("{at} is {}, expected an object", kind(&other))),
    }
}

/// Refuses the fields left in `obj` once the known ones are taken: a misspelt field would
/// otherwise be dropped without a word.
fn no_more(obj: &Map<String, Value>, at: &str, known: &str) -> std::result::Result<(), String> {
    match obj.keys().next() {
        Some(k) => Err(format!("{at}unknown field `{k}` (known: {known})")),
        None => Ok(()),
    }
}

/// A tool call `{"name", "args"}` (rag-eval's and ragas'; also `id`), or deepeval's
/// `{"name", "input_parameters"}`; `args_fields` names the arguments' fields, and `strict`
/// refuses any other field (rag-eval's format) rather than ignoring it (the others').
fn tool_call(
    v: Value,
    at: &str,
    args_fields: &[&str],
    strict: bool,
) -> std::result::Result<ToolCall, String> {
    let mut obj = object(v, at)?;
    let name = match string(&mut obj, "name", &format!("{at}."))? {
        Some(n) if !n.trim().is_empty() => n,
        _ => return Err(format!("{at} has no `name`: a tool call names its tool")),
    };
    let id = string(&mut obj, "id", &format!("{at}."))?;
    let mut args = Map::new();
    for field in args_fields {
        match obj.remove(*field) {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => args = m,
            Some(other) => {
                return Err(format!(
                    "{at}.`{field}` is {}, expected an object of arguments by name",
                    kind(&other)
                ))
            }
        }
    }
    if strict {
        no_more(&obj, &format!("{at}: "), "id, name, args")?;
    }
    Ok(ToolCall { id, name, args })
}

fn tool_calls(
    items: Option<Vec<Value>>,
    field: &str,
    args_fields: &[&str],
    strict: bool,
) -> std::result::Result<Vec<ToolCall>, String> {
    items
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(j, v)| tool_call(v, &format!("`{field}[{j}]`"), args_fields, strict))
        .collect()
}

fn line_id(line: usize) -> String {
    format!("line-{line}")
}

/// rag-eval's own format; unknown fields are errors.
fn own(mut obj: Map<String, Value>, line: usize) -> std::result::Result<Conversation, String> {
    let id = match string(&mut obj, "id", "")? {
        Some(id) if !id.trim().is_empty() => id,
        _ => return Err("missing field `id`: a conversation has an id".into()),
    };
    let turns = list(&mut obj, "turns", "")?.unwrap_or_default();
    let reference_tool_calls = list(&mut obj, "reference_tool_calls", "")?
        .map(|items| tool_calls(Some(items), "reference_tool_calls", &["args"], true))
        .transpose()?;
    let reference_outcome = string(&mut obj, "reference_outcome", "")?;
    let reference_topics = topics(list(&mut obj, "reference_topics", "")?)?;
    let max_steps = match obj.remove("max_steps") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| format!("`max_steps` is {v}, expected a whole number"))?,
        ),
    };
    obj.remove("metadata");
    no_more(
        &obj,
        "",
        "id, turns, reference_tool_calls, reference_outcome, reference_topics, max_steps, metadata",
    )?;
    let turns = turns
        .into_iter()
        .enumerate()
        .map(|(i, v)| own_turn(v, i))
        .collect::<std::result::Result<Vec<_>, String>>()?;
    Ok(Conversation {
        id,
        line,
        turns,
        reference_tool_calls,
        reference_outcome,
        reference_topics,
        max_steps,
    })
}

fn topics(items: Option<Vec<Value>>) -> std::result::Result<Vec<String>, String> {
    items
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::String(s) => Ok(s),
            other => Err(format!(
                "`reference_topics[{i}]` is {}, expected a string",
                kind(&other)
            )),
        })
        .collect()
}

fn role(given: &str, at: &str, known: &[(&str, Role)]) -> std::result::Result<Role, String> {
    known
        .iter()
        .find(|(name, _)| *name == given)
        .map(|(_, r)| *r)
        .ok_or_else(|| {
            let names: Vec<&str> = known.iter().map(|(n, _)| *n).collect();
            format!(
                "{at} is `{given}`, an unknown role (known: {})",
                names.join(", ")
            )
        })
}

fn own_turn(v: Value, i: usize) -> std::result::Result<Turn, String> {
    let at = format!("`turns[{i}]`");
    let mut obj = object(v, &at)?;
    let field = format!("{at}.");
    let role_name = string(&mut obj, "role", &field)?
        .ok_or_else(|| format!("{at} has no `role` (user, assistant or tool)"))?;
    let role = role(
        &role_name,
        &format!("`turns[{i}].role`"),
        &[
            ("user", Role::User),
            ("assistant", Role::Assistant),
            ("tool", Role::Tool),
        ],
    )?;
    let content = string(&mut obj, "content", &field)?;
    if role == Role::User && content.is_none() {
        return Err(format!("{at}: a user turn has no `content`"));
    }
    let calls = tool_calls(
        list(&mut obj, "tool_calls", &field)?,
        &format!("turns[{i}].tool_calls"),
        &["args"],
        true,
    )?;
    let tool_call_id = string(&mut obj, "tool_call_id", &field)?;
    let (contexts, text_contexts) = match list(&mut obj, "contexts", &field)? {
        Some(items) => crate::answers::read_contexts(items).map_err(|m| format!("{at}.{m}"))?,
        None => (Vec::new(), Vec::new()),
    };
    let reference_answer = string(&mut obj, "reference_answer", &field)?;
    let relevant_spans = match obj.remove("relevant_spans") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let spans: Vec<CharSpan> = serde_json::from_value(v).map_err(|e| {
                format!("{at}.`relevant_spans`: {e} (spans are {{\"doc_id\",\"start\",\"end\"}})")
            })?;
            for s in &spans {
                if let Some(m) = crate::span::offset_problem(s.doc.as_str(), s.start, s.end) {
                    return Err(format!("{at}.`relevant_spans`: {m}"));
                }
            }
            Some(spans)
        }
    };
    obj.remove("metadata");
    no_more(
        &obj,
        &format!("{at}: "),
        "role, content, tool_calls, tool_call_id, contexts, reference_answer, relevant_spans, metadata",
    )?;
    Ok(Turn {
        role,
        content: content.unwrap_or_default(),
        tool_calls: calls,
        tool_call_id,
        contexts,
        text_contexts,
        reference_answer,
        relevant_spans,
    })
}

/// ragas' `MultiTurnSample` as `EvaluationDataset.to_jsonl` writes it (`model_dump` without
/// nulls): messages `{"content","type","metadata"?,"tool_calls"?}`, `reference` (the
/// outcome), `reference_tool_calls`, `reference_topics`, `rubrics`. ragas has no id: a
/// sample is named by its line unless it carries an `id`. Other fields are ignored, as
/// pydantic ignores them.
fn ragas(mut obj: Map<String, Value>, line: usize) -> std::result::Result<Conversation, String> {
    let id = string(&mut obj, "id", "")?.unwrap_or_else(|| line_id(line));
    let messages = list(&mut obj, "user_input", "")?.unwrap_or_default();
    let turns = messages
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let at = format!("`user_input[{i}]`");
            let mut m = object(v, &at)?;
            let field = format!("{at}.");
            let type_name = string(&mut m, "type", &field)?
                .ok_or_else(|| format!("{at} has no `type` (human, ai or tool)"))?;
            let role = role(
                &type_name,
                &format!("`user_input[{i}].type`"),
                &[
                    ("human", Role::User),
                    ("ai", Role::Assistant),
                    ("tool", Role::Tool),
                ],
            )?;
            let content = string(&mut m, "content", &field)?
                .ok_or_else(|| format!("{at} has no `content`"))?;
            let mut turn = Turn::new(role, content);
            turn.tool_calls = tool_calls(
                list(&mut m, "tool_calls", &field)?,
                &format!("user_input[{i}].tool_calls"),
                &["args"],
                false,
            )?;
            Ok(turn)
        })
        .collect::<std::result::Result<Vec<_>, String>>()?;
    let reference_tool_calls = list(&mut obj, "reference_tool_calls", "")?
        .map(|items| tool_calls(Some(items), "reference_tool_calls", &["args"], false))
        .transpose()?;
    Ok(Conversation {
        id,
        line,
        turns,
        reference_tool_calls,
        reference_outcome: string(&mut obj, "reference", "")?,
        reference_topics: topics(list(&mut obj, "reference_topics", "")?)?,
        max_steps: None,
    })
}

/// deepeval's `ConversationalTestCase` JSON: `turns` of `user` and `assistant` with
/// `tools_called` (`{"name","input_parameters"}`) and `retrieval_context` (strings, or
/// `{"context","source"}`), camelCase aliases too; `name` is the id (else the line) and
/// `expected_outcome` the reference outcome. A called tool's `output` lives inside the call,
/// not in a turn of its own, and is not read. Other fields are ignored, as pydantic ignores
/// them.
fn deepeval(mut obj: Map<String, Value>, line: usize) -> std::result::Result<Conversation, String> {
    let id = string(&mut obj, "name", "")?.unwrap_or_else(|| line_id(line));
    let reference_outcome = match string(&mut obj, "expected_outcome", "")? {
        Some(o) => Some(o),
        None => string(&mut obj, "expectedOutcome", "")?,
    };
    let turns = list(&mut obj, "turns", "")?
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let at = format!("`turns[{i}]`");
            let mut t = object(v, &at)?;
            let field = format!("{at}.");
            let role_name = string(&mut t, "role", &field)?
                .ok_or_else(|| format!("{at} has no `role` (user or assistant)"))?;
            let role = role(
                &role_name,
                &format!("`turns[{i}].role`"),
                &[("user", Role::User), ("assistant", Role::Assistant)],
            )?;
            let content = string(&mut t, "content", &field)?
                .ok_or_else(|| format!("{at} has no `content`"))?;
            let mut turn = Turn::new(role, content);
            let called = match list(&mut t, "tools_called", &field)? {
                Some(c) => Some(c),
                None => list(&mut t, "toolsCalled", &field)?,
            };
            turn.tool_calls = tool_calls(
                called,
                &format!("turns[{i}].tools_called"),
                &["inputParameters", "input_parameters"],
                false,
            )?;
            let retrieved = match list(&mut t, "retrieval_context", &field)? {
                Some(c) => Some(c),
                None => list(&mut t, "retrievalContext", &field)?,
            };
            if let Some(items) = retrieved {
                // `RetrievedContextData` is `{"context","source"}`: the text, and where it
                // came from in the system's own terms (not a document id of a corpus).
                let items = items
                    .into_iter()
                    .map(|v| match v {
                        Value::Object(mut m) => m.remove("context").unwrap_or(Value::Object(m)),
                        v => v,
                    })
                    .collect();
                let (contexts, text) = crate::answers::read_contexts(items).map_err(|m| {
                    format!("{at}.{}", m.replace("contexts[", "retrieval_context["))
                })?;
                turn.contexts = contexts;
                turn.text_contexts = text;
            }
            Ok(turn)
        })
        .collect::<std::result::Result<Vec<_>, String>>()?;
    Ok(Conversation {
        id,
        line,
        turns,
        reference_tool_calls: None,
        reference_outcome,
        reference_topics: Vec::new(),
        max_steps: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> std::result::Result<Vec<Conversation>, String> {
        Reader::new(text.as_bytes(), "c.jsonl".into())
            .collect::<Result<Vec<_>>>()
            .map_err(|e| e.to_string())
    }

    #[test]
    fn formats_are_told_by_their_fields() {
        let own = r#"{"id":"a","turns":[{"role":"user","content":"hi"}]}"#;
        let ragas = r#"{"user_input":[{"content":"hi","type":"human"}]}"#;
        let deepeval = r#"{"turns":[{"role":"user","content":"hi"}]}"#;
        for (text, want) in [
            (own, Format::RagEval),
            (ragas, Format::Ragas),
            (deepeval, Format::Deepeval),
        ] {
            let mut r = Reader::new(text.as_bytes(), "c.jsonl".into());
            let c = r.next().unwrap().unwrap();
            assert_eq!(r.format(), Some(want));
            assert_eq!(c.turns, vec![Turn::new(Role::User, "hi")]);
        }
        let mixed = format!("{own}\n{ragas}\n");
        assert_eq!(
            read(&mixed).unwrap_err(),
            "c.jsonl:2: reads as ragas' MultiTurnSample, but line 1 read as rag-eval's conversation format: a file holds one format"
        );
        // A rag-eval line missing its id is not taken for deepeval's.
        let no_id = r#"{"turns":[{"role":"user","content":"hi"}],"reference_tool_calls":[]}"#;
        assert_eq!(
            read(no_id).unwrap_err(),
            "c.jsonl:1: missing field `id`: a conversation has an id"
        );
    }
}
