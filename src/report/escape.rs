//! Escaping for the three output languages. Everything a run carries (query text, document
//! ids, chunk text, labels) is user input and passes through here.

/// Text safe inside HTML elements and quoted attribute values.
pub(crate) fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Text safe inside XML 1.0 elements and quoted attributes: markup escaped, and the characters
/// XML 1.0 cannot hold at all (most control characters, U+FFFE, U+FFFF) replaced by U+FFFD.
pub(crate) fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Kept as references so attribute values keep them (parsers normalise literal
            // whitespace in attributes to spaces).
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Text safe in one cell of a Markdown table: pipes, code and link markup and the start of
/// HTML tags escaped, line breaks as spaces (a table row is one line).
pub(crate) fn markdown_cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '\\' => out.push_str("\\\\"),
            '`' => out.push_str("\\`"),
            '*' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
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
        let m = markdown_cell("a | b\nc <b>`x`");
        assert_eq!(m, "a \\| b c &lt;b>\\`x\\`");
    }
}
