//! Escaping for the output languages: HTML, XML, Markdown and the terminal. Everything a run
//! carries (query text, document ids, chunk text, labels) is user input and passes through
//! here.

/// `s` with each character that `replacement` names replaced by what it returns (possibly
/// nothing); the others kept.
fn replaced(s: &str, replacement: impl Fn(char) -> Option<&'static str>) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match replacement(c) {
            Some(r) => out.push_str(r),
            None => out.push(c),
        }
    }
    out
}

/// The entities of the markup characters HTML and XML share; the apostrophe differs.
fn markup(c: char) -> Option<&'static str> {
    match c {
        '&' => Some("&amp;"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        '"' => Some("&quot;"),
        _ => None,
    }
}

/// Text safe inside HTML elements and quoted attribute values; C0 control characters other
/// than tab, line feed and carriage return (which HTML cannot hold) are left out.
#[cfg(feature = "report")]
pub(crate) fn html(s: &str) -> String {
    replaced(s, |c| match c {
        '\'' => Some("&#39;"),
        '\t' | '\n' | '\r' => None,
        c if (c as u32) < 0x20 || c == '\u{7f}' => Some(""),
        c => markup(c),
    })
}

/// Text safe to print to a terminal as one field of a line: control characters (C0, DEL, C1:
/// escape sequences that retitle or recolour the terminal, carriage returns and line feeds that
/// forge lines) and the bidirectional overrides that reorder what is shown are written as
/// Rust-style escapes (`\n`, `\u{1b}`); everything else is kept. A backslash is kept as it is.
pub(crate) fn terminal(s: &str) -> String {
    let unsafe_char =
        |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !s.chars().any(unsafe_char) {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Text safe inside XML 1.0 elements and quoted attributes: markup escaped, and the characters
/// XML 1.0 cannot hold at all (most control characters, U+FFFE, U+FFFF) replaced by U+FFFD.
pub(crate) fn xml(s: &str) -> String {
    replaced(s, |c| match c {
        '\'' => Some("&apos;"),
        // Kept as references so attribute values keep them (parsers normalise literal
        // whitespace in attributes to spaces).
        '\n' => Some("&#10;"),
        '\r' => Some("&#13;"),
        '\t' => Some("&#9;"),
        c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => Some("\u{FFFD}"),
        c => markup(c),
    })
}

/// Text safe in one cell of a Markdown table: pipes, code and link markup and the start of
/// HTML tags escaped, line breaks as spaces (a table row is one line).
#[cfg(feature = "report")]
pub(crate) fn markdown_cell(s: &str) -> String {
    replaced(s, |c| match c {
        '|' => Some("\\|"),
        '\\' => Some("\\\\"),
        '`' => Some("\\`"),
        '*' => Some("\\*"),
        '[' => Some("\\["),
        ']' => Some("\\]"),
        '<' => Some("&lt;"),
        '&' => Some("&amp;"),
        '\n' | '\r' | '\t' => Some(" "),
        c if c.is_control() => Some(""),
        _ => None,
    })
}

#[cfg(test)]
mod terminal_tests {
    use super::terminal;

    #[test]
    fn control_characters_cannot_reach_the_terminal() {
        assert_eq!(
            terminal("a\u{1b}]0;title\u{7}b\r\nc\td\u{9b}31m\u{202e}e"),
            "a\\u{1b}]0;title\\u{7}b\\r\\nc\\td\\u{9b}31m\\u{202e}e"
        );
        assert_eq!(terminal("plain, ünïcode \\ kept"), "plain, ünïcode \\ kept");
    }
}

#[cfg(test)]
#[cfg(feature = "report")]
mod tests {
    use super::*;

    #[test]
    fn markup_cannot_escape_its_context() {
        let evil = r#"<script>alert('x')</script>" onload="x" & </td>"#;
        let h = html(evil);
        assert!(!h.contains('<') && !h.contains('>') && !h.contains('"') && !h.contains('\''));
        assert_eq!(html("a&b"), "a&amp;b");
        let x = xml("a<b>\u{1}\u{0}c\"'\n\u{FFFF}");
        assert_eq!(x, "a&lt;b&gt;\u{FFFD}\u{FFFD}c&quot;&apos;&#10;\u{FFFD}");
        assert_eq!(html("a\u{1b}[31mb\u{7}\n"), "a[31mb\n");
        let m = markdown_cell("a | b\nc <b>`x`");
        assert_eq!(m, "a \\| b c &lt;b>\\`x\\`");
    }
}
