//! The syntax of specs: parsing text into a [`Spec`] tree and printing it back.
//!
//! Parsing reads the component tables ([`Kind::components`]): they say which keys a component
//! has and which of them hold another component, which is what makes nesting without
//! parentheses unambiguous.

use super::components::{Component, Kind};
use super::registry::did_you_mean;
use crate::error::{Fault, Result};
use std::fmt;

/// A parsed component spec: a component name and its `key=value` settings in the
/// component's own key order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    name: String,
    params: Vec<(String, Value)>,
}

/// The value of one key: text, or another component.
///
/// It is also what a built component reports as its spec (`spec()` of
/// [`Embedder`](crate::embed::Embedder), [`Retriever`](crate::retrieve::Retriever), …): a
/// [`Spec`] for a component a spec builds, text (its name) for one that none does. A
/// component that holds others nests their values as they are, so nothing is printed to be
/// parsed back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A plain value (a number, a name, a URL, a path).
    Text(String),
    /// A nested component, e.g. the embedder of a dense retriever.
    Spec(Spec),
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Text(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Text(s)
    }
}

impl From<Spec> for Value {
    fn from(s: Spec) -> Self {
        Value::Spec(s)
    }
}

impl Spec {
    /// A spec naming `name` with no settings; add them with [`Spec::with`].
    pub fn new(name: impl Into<String>) -> Self {
        Spec {
            name: name.into(),
            params: Vec::new(),
        }
    }

    /// Adds (or replaces) a setting. Printing keeps the order settings were added in, so
    /// components add them in their table's key order.
    pub fn with(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        let key = key.into();
        let value = value.into();
        match self.params.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.params.push((key, value)),
        }
        self
    }

    /// Parses `text` as a spec of a `kind` component.
    ///
    /// Errors name the spec, the component and the key at fault, and list what is valid.
    pub fn parse(kind: Kind, text: &str) -> Result<Spec> {
        let mut p = Parser { src: text, pos: 0 };
        let result = p.component(kind, &[]).and_then(|spec| {
            p.skip_blanks();
            match p.peek() {
                None => Ok(spec),
                Some(c) => Err(Fault::new(format!(
                    "unexpected `{c}` at character {}",
                    text[..p.pos].chars().count() + 1
                ))),
            }
        });
        result.map_err(|f| f.in_spec(kind.as_str(), text).into())
    }

    /// The component's name, e.g. `openai`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The settings given, in the component's key order.
    pub fn params(&self) -> &[(String, Value)] {
        &self.params
    }

    /// The value of `key`, if given.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.params.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The text value of `key`, if given as text.
    pub fn text(&self, key: &str) -> Option<&str> {
        match self.get(key) {
            Some(Value::Text(t)) => Some(t),
            _ => None,
        }
    }

    /// The nested component of `key`, if given.
    pub fn nested(&self, key: &str) -> Option<&Spec> {
        match self.get(key) {
            Some(Value::Spec(s)) => Some(s),
            _ => None,
        }
    }

    /// The value of `key` as a whole number.
    pub(crate) fn whole(&self, key: &str) -> std::result::Result<Option<usize>, Fault> {
        self.text(key)
            .map(|v| {
                v.parse::<usize>().map_err(|_| {
                    Fault::key(key, format!("`{key}` must be a whole number, got `{v}`"))
                })
            })
            .transpose()
    }

    /// The value of `key` as a number.
    pub(crate) fn number(&self, key: &str) -> std::result::Result<Option<f64>, Fault> {
        self.text(key)
            .map(|v| {
                v.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| Fault::key(key, format!("`{key}` must be a number, got `{v}`")))
            })
            .transpose()
    }

    /// The value of `key`, which the component cannot do without.
    #[cfg_attr(
        not(any(
            feature = "openai",
            feature = "onnx",
            feature = "chroma",
            feature = "cohere"
        )),
        allow(dead_code)
    )]
    pub(crate) fn required(&self, key: &str) -> std::result::Result<&str, Fault> {
        self.text(key)
            .ok_or_else(|| Fault::key(key, format!("`{key}` is required")))
    }

    fn write_params(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (k, v)) in self.params.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{k}=")?;
            match v {
                Value::Text(t) => write_text(f, t)?,
                Value::Spec(s) => s.write_nested(f)?,
            }
        }
        Ok(())
    }

    /// A nested component prints as `name(key=value,...)`: the parentheses close it, so no
    /// key of it can be read as the outer component's.
    fn write_nested(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if !self.params.is_empty() {
            f.write_str("(")?;
            self.write_params(f)?;
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A spec in its canonical form; text as it is.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Text(t) => f.write_str(t),
            Value::Spec(s) => s.fmt(f),
        }
    }
}

/// The canonical form: `name:key=value,...`, nested components as `name(key=value,...)`, text
/// quoted only when it holds `,`, `(`, `)` or `"`, is empty, or has blanks at either end.
impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if !self.params.is_empty() {
            f.write_str(":")?;
            self.write_params(f)?;
        }
        Ok(())
    }
}

fn write_text(f: &mut fmt::Formatter<'_>, t: &str) -> fmt::Result {
    let plain =
        !t.is_empty() && t.trim() == t && !t.contains([',', '(', ')', '"']) && !t.starts_with('\\');
    if plain {
        return f.write_str(t);
    }
    f.write_str("\"")?;
    for c in t.chars() {
        if c == '"' || c == '\\' {
            f.write_str("\\")?;
        }
        write!(f, "{c}")?;
    }
    f.write_str("\"")
}

/// Where a component's settings end.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Close {
    /// At the end of the text, or at a key of an enclosing component.
    Open,
    /// At the matching `)`.
    Paren,
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
}

type Parsed<T> = std::result::Result<T, Fault>;

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn bump(&mut self) {
        if let Some(c) = self.peek() {
            self.pos += c.len_utf8();
        }
    }

    fn skip_blanks(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    fn expect_close(&mut self, what: &str) -> Parsed<()> {
        self.skip_blanks();
        if self.peek() == Some(')') {
            self.bump();
            Ok(())
        } else {
            Err(Fault::new(format!("`(` of {what} is never closed")))
        }
    }

    /// One component of `kind`. `outer` are the components whose settings this one's
    /// unparenthesised settings continue: a key of theirs ends this component.
    fn component(&mut self, kind: Kind, outer: &[&'static Component]) -> Parsed<Spec> {
        self.skip_blanks();
        if self.peek() == Some('(') {
            self.bump();
            let spec = self.component(kind, &[])?;
            self.expect_close(&format!("`{}`", spec.name))?;
            return Ok(spec);
        }
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| !matches!(c, ':' | '(' | ',' | ')'))
        {
            self.bump();
        }
        let name = self.src[start..self.pos].trim();
        let components = kind.components();
        let Some(component) = components.iter().find(|c| c.name == name).copied() else {
            let names: Vec<&str> = components.iter().map(|c| c.name).collect();
            return Err(Fault::new(if name.is_empty() {
                format!("no {kind} named; known: {}", names.join(", "))
            } else {
                format!(
                    "unknown {kind} `{name}`{}; known: {}",
                    did_you_mean(name, &names),
                    names.join(", ")
                )
            }));
        };
        let mut spec = Spec::new(name);
        match self.peek() {
            Some('(') => {
                self.bump();
                self.params(component, &mut spec, Close::Paren, &[])?;
                self.expect_close(&format!("`{name}`"))?;
            }
            Some(':') => {
                self.bump();
                self.params(component, &mut spec, Close::Open, outer)?;
            }
            _ => {}
        }
        let order = |k: &str| component.keys.iter().position(|key| key.name == k);
        spec.params.sort_by_key(|(k, _)| order(k));
        Ok(spec)
    }

    fn params(
        &mut self,
        component: &'static Component,
        spec: &mut Spec,
        close: Close,
        outer: &[&'static Component],
    ) -> Parsed<()> {
        let mut first = true;
        loop {
            self.skip_blanks();
            let before_comma = self.pos;
            let leading = first;
            if !first {
                if self.peek() != Some(',') {
                    return Ok(());
                }
                self.bump();
            }
            first = false;
            self.skip_blanks();
            if close == Close::Paren && self.peek() == Some(')') {
                return Ok(());
            }
            let start = self.pos;
            while self.peek().is_some_and(|c| !matches!(c, '=' | ',' | ')')) {
                self.bump();
            }
            let key = self.src[start..self.pos].trim();
            if self.peek() != Some('=') {
                if key.is_empty() && self.peek().is_none() {
                    // A trailing comma.
                    return Ok(());
                }
                return Err(Fault::key(key, format!("`{key}` is not key=value")));
            }
            // The first key after `name:` is the component's own, whoever else has it.
            if !leading && outer.iter().any(|o| o.key(key).is_some()) {
                self.pos = before_comma;
                return Ok(());
            }
            let Some(k) = component.key(key) else {
                return Err(unknown_key(component, key, outer));
            };
            if spec.get(key).is_some() {
                return Err(Fault::key(key, format!("key `{key}` given twice")));
            }
            self.bump();
            let value = match k.nested {
                Some(kind) => {
                    let mut enclosing: Vec<&'static Component> = match close {
                        Close::Open => outer.to_vec(),
                        Close::Paren => Vec::new(),
                    };
                    enclosing.push(component);
                    Value::Spec(
                        self.component(kind, &enclosing)
                            .map_err(|f| f.within(key))?,
                    )
                }
                None => Value::Text(self.text(key)?),
            };
            spec.params.push((key.to_owned(), value));
        }
    }

    /// A text value: quoted, or up to the next `,` or unmatched `)`.
    fn text(&mut self, key: &str) -> Parsed<String> {
        self.skip_blanks();
        if self.peek() == Some('"') {
            self.bump();
            let mut out = String::new();
            loop {
                match self.peek() {
                    None => return Err(never_closed(key)),
                    Some('"') => {
                        self.bump();
                        return Ok(out);
                    }
                    Some('\\') => {
                        self.bump();
                        match self.peek() {
                            Some(c) => {
                                out.push(c);
                                self.bump();
                            }
                            None => return Err(never_closed(key)),
                        }
                    }
                    Some(c) => {
                        out.push(c);
                        self.bump();
                    }
                }
            }
        }
        let start = self.pos;
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            match c {
                ',' if depth == 0 => break,
                ')' if depth == 0 => break,
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => {}
            }
            self.bump();
        }
        let value = self.src[start..self.pos].trim();
        if value.is_empty() {
            return Err(Fault::key(key, format!("`{key}` has no value")));
        }
        Ok(value.to_owned())
    }
}

fn never_closed(key: &str) -> Fault {
    Fault::key(key, format!("the quoted value of `{key}` is never closed"))
}

fn unknown_key(component: &Component, key: &str, outer: &[&'static Component]) -> Fault {
    let keys: Vec<&str> = component.keys.iter().map(|k| k.name).collect();
    let mut hint = did_you_mean(key, &keys);
    if hint.is_empty() {
        // A misspelt key of an enclosing component lands here: suggest it by its owner.
        for o in outer.iter().rev() {
            let theirs: Vec<&str> = o.keys.iter().map(|k| k.name).collect();
            let h = did_you_mean(key, &theirs);
            if let Some(name) = h.strip_prefix(" (did you mean `") {
                let name = name.trim_end_matches("`?)");
                hint = format!(" (did you mean `{name}` of `{}`?)", o.name);
                break;
            }
        }
    }
    let list = if keys.is_empty() {
        "none".to_owned()
    } else {
        keys.join(", ")
    };
    Fault::key(
        key,
        format!(
            "unknown key `{key}` for `{}`{hint}; keys: {list}",
            component.name
        ),
    )
}
