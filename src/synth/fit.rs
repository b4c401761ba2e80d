//! Windows that fit the model's context: learned from the server's answer that a request was
//! too long (llama-server's `exceed_context_size_error`, OpenAI's `context_length_exceeded`),
//! or estimated from [`GenerateConfig::context_tokens`].

use super::{DocumentBatch, Dropped, GenerateConfig};
use crate::corpus::Document;
use crate::error::Error;
use crate::level::Level;
use crate::llm::TokenUsage;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The shortest window a document is cut into; a document whose windows would have to be
/// shorter is dropped.
pub(crate) const MIN_WINDOW_CHARS: usize = 100;

/// Characters per token assumed for [`GenerateConfig::context_tokens`]: fewer than English
/// text has (about 4), so the estimate errs on the short side.
const CHARS_PER_TOKEN: usize = 3;

/// The sizes a server gave when it refused a request longer than its context.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Overflow {
    /// The model's context, in tokens.
    pub(crate) context: Option<usize>,
    /// The request's prompt, in tokens.
    pub(crate) prompt: Option<usize>,
}

/// Whether `error` is a server's refusal of a request longer than the model's context, and
/// the sizes it named.
pub(crate) fn overflow(error: &Error) -> Option<Overflow> {
    let Error::Http {
        status: Some(400),
        message,
        ..
    } = error
    else {
        return None;
    };
    const SIGNS: [&str; 4] = [
        "exceed_context_size_error",
        "exceeds the available context size",
        "context_length_exceeded",
        "maximum context length",
    ];
    if !SIGNS.iter().any(|s| message.contains(s)) {
        return None;
    }
    let first = |keys: &[&str]| keys.iter().find_map(|k| number_after(message, k));
    Some(Overflow {
        context: first(&[
            "\"n_ctx\":",
            "available context size (",
            "maximum context length is ",
        ]),
        prompt: first(&["\"n_prompt_tokens\":", "request (", "resulted in "]),
    })
}

fn number_after(text: &str, key: &str) -> Option<usize> {
    let rest = text[text.find(key)? + key.len()..].trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// What the last request of a document sent: all its characters, and those of the document
/// text in it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sent {
    pub(crate) chars: usize,
    pub(crate) document_chars: usize,
}

/// The window documents are cut into, shared by every document of a generator: it starts at
/// [`GenerateConfig::window_chars`] (less when [`GenerateConfig::context_tokens`] says so) and
/// only shrinks, each time a server refuses a request as too long.
#[derive(Debug)]
pub(crate) struct Fit {
    window: AtomicUsize,
}

impl Fit {
    pub(crate) fn new(config: &GenerateConfig) -> Fit {
        let mut window = config.window_chars;
        if let Some(tokens) = config.context_tokens {
            // Half the room left by the answer for the document, the rest for the prompt.
            let room = room(tokens, config) / 2;
            window = window.min((room * CHARS_PER_TOKEN).max(MIN_WINDOW_CHARS));
        }
        Fit {
            window: AtomicUsize::new(window),
        }
    }

    /// The window to cut documents into now, in characters.
    pub(crate) fn window(&self) -> usize {
        self.window.load(Ordering::SeqCst)
    }

    /// After a document's request `sent` with windows of `tried` characters failed with
    /// `error`: the smaller window to try again with (learned for every later document too),
    /// `Ok(None)` when the document cannot be made to fit, or the error itself when it is not
    /// about the context.
    pub(crate) fn after(
        &self,
        error: Error,
        tried: usize,
        sent: Sent,
        config: &GenerateConfig,
    ) -> Result<Option<usize>, Error> {
        let Some(o) = overflow(&error) else {
            return Err(error);
        };
        let next = match (o.context, o.prompt) {
            (Some(context), Some(prompt)) if prompt > 0 && sent.chars > 0 => {
                // Characters per token of this request; the prompt besides the document stays.
                let per_token = sent.chars as f64 / prompt as f64;
                let other = (sent.chars - sent.document_chars.min(sent.chars)) as f64 / per_token;
                let room = room(context, config) as f64;
                ((room - other) * per_token * 0.9).max(0.0) as usize
            }
            _ => tried / 2,
        };
        let next = next.min(tried * 9 / 10);
        if next < MIN_WINDOW_CHARS {
            return Ok(None);
        }
        self.window.fetch_min(next, Ordering::SeqCst);
        tracing::info!(
            "the model's context{} is too small for windows of {tried} characters; cutting \
             documents into windows of {next}",
            o.context
                .map(|c| format!(" ({c} tokens)"))
                .unwrap_or_default()
        );
        Ok(Some(next))
    }
    /// [`Fit::after`] for a document's attempt at windows of `tried` characters: `Ok(Ok(window))`
    /// to try again with, `Ok(Err(batch))` when the document is left out (no rows, the reason
    /// recorded, the `usage` and `calls` it cost kept), or the error when it is not about the
    /// context.
    pub(crate) fn retry_or_leave_out<L: Level>(
        &self,
        error: Error,
        tried: usize,
        sent: Sent,
        config: &GenerateConfig,
        (doc, usage, calls): (&Document, TokenUsage, usize),
    ) -> Result<Result<usize, DocumentBatch<L>>, Error> {
        let reason = too_long(tried, &error);
        Ok(match self.after(error, tried, sent, config)? {
            Some(smaller) => Ok(smaller),
            None => Err(dropped_document(doc, reason, usage, calls)),
        })
    }
}

/// The tokens of a context of `context` left for the prompt: all but the answer's
/// `max_tokens`, or half when that is more than half (a server stops an answer that reaches
/// the end of its context, so a larger `max_tokens` only bounds it).
fn room(context: usize, config: &GenerateConfig) -> usize {
    let answer = config.max_tokens.map_or(0, |t| t as usize);
    context - answer.min(context / 2)
}

/// The batch of a document left out whole: no rows, `reason` recorded, the calls it cost kept.
fn dropped_document<L: Level>(
    doc: &Document,
    reason: String,
    usage: TokenUsage,
    calls: usize,
) -> DocumentBatch<L> {
    tracing::warn!("document `{}` left out: {reason}", doc.id());
    DocumentBatch {
        doc_id: doc.id().clone(),
        examples: Vec::new(),
        dropped: Dropped {
            documents: 1,
            ..Dropped::default()
        },
        usage,
        calls,
        dropped_reason: Some(reason),
    }
}

/// Why a document is left out: even windows of `tried` characters exceed the context.
fn too_long(tried: usize, error: &Error) -> String {
    format!("the model's context is too small even for windows of {tried} characters ({error})")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, body: &str) -> Error {
        Error::Http {
            endpoint: "POST http://127.0.0.1:1/v1/chat/completions".into(),
            status: Some(status),
            message: format!("{status} Bad Request: {body}"),
        }
    }

    #[test]
    fn the_servers_answers_give_the_sizes() {
        let llama = http(
            400,
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4147,"n_ctx":4096}}"#,
        );
        assert_eq!(
            overflow(&llama),
            Some(Overflow {
                context: Some(4096),
                prompt: Some(4147)
            })
        );
        let older = http(
            400,
            r#"{"error":{"code":400,"message":"request (4147 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error"}}"#,
        );
        assert_eq!(
            overflow(&older),
            Some(Overflow {
                context: Some(4096),
                prompt: Some(4147)
            })
        );
        let openai = http(
            400,
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        );
        assert_eq!(
            overflow(&openai),
            Some(Overflow {
                context: Some(8192),
                prompt: Some(9000)
            })
        );
        assert_eq!(overflow(&http(400, r#"{"error":"bad model"}"#)), None);
        assert_eq!(
            overflow(&http(500, "exceed_context_size_error")),
            None,
            "only a refusal of the request"
        );
    }

    #[test]
    fn a_window_shrinks_to_what_the_context_leaves() {
        let config = GenerateConfig {
            max_tokens: Some(1000),
            ..GenerateConfig::default()
        };
        let fit = Fit::new(&config);
        assert_eq!(fit.window(), 6000);
        // 12,000 characters were 4,000 tokens (3 a token), 6,000 of them the document's: the
        // prompt besides it is 2,000 tokens; 4,096 less 1,000 for the answer and 2,000 for the
        // prompt leaves 1,096 tokens, 3,288 characters, and 90% of that.
        let sent = Sent {
            chars: 12_000,
            document_chars: 6000,
        };
        let next = fit
            .after(
                http(
                    400,
                    r#""type":"exceed_context_size_error","n_prompt_tokens":4000,"n_ctx":4096"#,
                ),
                6000,
                sent,
                &config,
            )
            .unwrap();
        assert_eq!(next, Some(2959));
        assert_eq!(fit.window(), 2959, "learned for the next documents");
        // Without sizes: half.
        let next = fit
            .after(http(400, "context_length_exceeded"), 2959, sent, &config)
            .unwrap();
        assert_eq!(next, Some(1479));
        // A prompt that leaves no room: the document cannot fit.
        let none = fit.after(
            http(
                400,
                r#""type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":4096"#,
            ),
            1479,
            Sent {
                chars: 27_000,
                document_chars: 1479,
            },
            &config,
        );
        assert_eq!(none.unwrap(), None);
        // Any other error is the caller's.
        assert!(fit.after(http(401, "no key"), 1479, sent, &config).is_err());
    }

    #[test]
    fn context_tokens_bound_the_first_window() {
        let config = GenerateConfig {
            context_tokens: Some(4096),
            max_tokens: Some(1024),
            ..GenerateConfig::default()
        };
        // (4,096 − 1,024) / 2 tokens at 3 characters each.
        assert_eq!(Fit::new(&config).window(), 4608);
    }
}
