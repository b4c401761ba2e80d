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

/// The window documents are cut into and the answer's budget, shared by every document of a
/// generator. The window starts at [`GenerateConfig::window_chars`] (less when
/// [`GenerateConfig::context_tokens`] says so) and only shrinks, each time a server refuses a
/// request as too long. The answer's budget is [`GenerateConfig::max_tokens`] until the
/// model's context is known (given, or named by a server's refusal); then at most a quarter of
/// the context ([`ANSWER_SHARE`]) and half of what the prompt leaves of it, so that a small
/// context is not held out of the document by a budget larger than the answer can use.
#[derive(Debug)]
pub(crate) struct Fit {
    window: AtomicUsize,
    /// The answer's budget in tokens once the context is known; 0 before.
    answer: AtomicUsize,
}

/// The largest share of the model's context an answer is given once the context is known:
/// one part in this many.
pub(crate) const ANSWER_SHARE: usize = 4;

impl Fit {
    pub(crate) fn new(config: &GenerateConfig) -> Fit {
        let mut window = config.window_chars;
        let mut answer = 0;
        if let Some(tokens) = config.context_tokens {
            // Half the room left by the answer for the document, the rest for the prompt.
            answer = answer_budget(tokens, tokens, config);
            if let Some(asked) = config.max_tokens.filter(|&m| m as usize > answer) {
                tracing::info!(
                    "a context of {tokens} tokens gives an answer at most {answer} tokens, \
                     not the {asked} asked (--max-tokens)"
                );
            }
            let room = (tokens - answer) / 2;
            window = window.min((room * CHARS_PER_TOKEN).max(MIN_WINDOW_CHARS));
        }
        Fit {
            window: AtomicUsize::new(window),
            answer: AtomicUsize::new(answer),
        }
    }

    /// The window to cut documents into now, in characters.
    pub(crate) fn window(&self) -> usize {
        self.window.load(Ordering::SeqCst)
    }

    /// The `max_tokens` to send now: [`GenerateConfig::max_tokens`], fitted to the model's
    /// context once it is known (`None` stays `None`: the server's own bound).
    pub(crate) fn max_tokens(&self, config: &GenerateConfig) -> Option<u32> {
        let fitted = self.answer.load(Ordering::SeqCst);
        config.max_tokens.map(|m| match u32::try_from(fitted) {
            Ok(0) => m,
            Ok(f) => m.min(f),
            Err(_) => m,
        })
    }

    /// After a document's request `sent` with windows of `tried` characters failed with
    /// `error`: the smaller window to try again with (learned for every later document too),
    /// `Ok(Err(reason))` when the document cannot be made to fit, or the error itself when it
    /// is not about the context.
    pub(crate) fn after(
        &self,
        error: Error,
        tried: usize,
        sent: Sent,
        config: &GenerateConfig,
    ) -> Result<Result<usize, String>, Error> {
        let Some(o) = overflow(&error) else {
            return Err(error);
        };
        let (next, sizes) = match (o.context, o.prompt) {
            (Some(context), Some(prompt)) if prompt > 0 && sent.chars > 0 => {
                // Characters per token of this request; the prompt besides the document stays.
                let per_token = sent.chars as f64 / prompt as f64;
                let other = (sent.chars - sent.document_chars.min(sent.chars)) as f64 / per_token;
                let left = (context as f64 - other).max(0.0);
                let answer = answer_budget(context, left as usize, config);
                let room = left - answer as f64;
                let next = (room * per_token * 0.9).max(0.0) as usize;
                (next, Some((context, other.round() as usize, answer)))
            }
            _ => (tried / 2, None),
        };
        let next = next.min(tried * 9 / 10);
        if next < MIN_WINDOW_CHARS {
            return Ok(Err(match sizes {
                Some((context, other, _)) => format!(
                    "the model's context of {context} tokens cannot hold the prompt (about \
                     {other} tokens besides the document) with an answer and \
                     {MIN_WINDOW_CHARS} characters of the document; a larger context \
                     (llama-server's `-c`) or a shorter prompt (--prompt-file, --few-shot) would \
                     fit it ({error})"
                ),
                None => format!(
                    "the model's context is too small even for windows of {tried} characters \
                     ({error})"
                ),
            }));
        }
        self.window.fetch_min(next, Ordering::SeqCst);
        if let Some((_, _, answer)) = sizes {
            self.fit_answer(answer);
        }
        tracing::info!(
            "the model's context{} is too small for windows of {tried} characters; cutting \
             documents into windows of {next}{}",
            o.context
                .map(|c| format!(" ({c} tokens)"))
                .unwrap_or_default(),
            sizes
                .map(|(_, _, answer)| format!(", answers of at most {answer} tokens"))
                .unwrap_or_default()
        );
        Ok(Ok(next))
    }

    /// Lowers the answer's budget to `answer` tokens (it only shrinks, as the window does).
    fn fit_answer(&self, answer: usize) {
        let _ = self
            .answer
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                (now == 0 || answer < now).then_some(answer)
            });
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
        Ok(match self.after(error, tried, sent, config)? {
            Ok(smaller) => Ok(smaller),
            Err(reason) => Err(dropped_document(doc, reason, usage, calls)),
        })
    }
}

/// The tokens an answer is given in a context of `context` tokens of which the prompt leaves
/// `left`: the configured `max_tokens`, at most a quarter of the context ([`ANSWER_SHARE`]) and
/// half of what is left (a server stops an answer that reaches the end of its context, so a
/// larger budget would only keep the document out), and at least 1.
fn answer_budget(context: usize, left: usize, config: &GenerateConfig) -> usize {
    let asked = config.max_tokens.map_or(usize::MAX, |t| t as usize);
    asked.min(context / ANSWER_SHARE).min(left / 2).max(1)
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
        assert_eq!(next, Ok(2959));
        assert_eq!(fit.window(), 2959, "learned for the next documents");
        // Without sizes: half.
        let next = fit
            .after(http(400, "context_length_exceeded"), 2959, sent, &config)
            .unwrap();
        assert_eq!(next, Ok(1479));
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
        let reason = none.unwrap().unwrap_err();
        assert!(
            reason.starts_with(
                "the model's context of 4096 tokens cannot hold the prompt (about 8507 tokens \
                 besides the document) with an answer and 100 characters of the document"
            ),
            "{reason}"
        );
        // Any other error is the caller's.
        assert!(fit.after(http(401, "no key"), 1479, sent, &config).is_err());
    }

    /// llama-server at `-c 1024` and the default budget of 2,048 tokens: the budget is cut to
    /// what the context can give an answer, and the document gets the rest.
    #[test]
    fn a_small_context_fits_the_answers_budget_and_keeps_room_for_the_document() {
        let config = GenerateConfig::default();
        let fit = Fit::new(&config);
        assert_eq!(
            fit.max_tokens(&config),
            Some(crate::synth::DEFAULT_MAX_TOKENS)
        );
        // 6,000 characters of the document and 3,300 of prompt, 2,325 tokens at 4 a token:
        // the prompt is 825 of the 1,024, leaving 199: 99 for the answer, 100 for the
        // document, 360 of its characters.
        let sent = Sent {
            chars: 9300,
            document_chars: 6000,
        };
        let next = fit.after(
            http(
                400,
                r#""type":"exceed_context_size_error","n_prompt_tokens":2325,"n_ctx":1024"#,
            ),
            6000,
            sent,
            &config,
        );
        assert_eq!(next.unwrap(), Ok(360));
        assert_eq!(fit.max_tokens(&config), Some(99));
        // The budget only shrinks, and a budget left to the server stays so.
        fit.fit_answer(500);
        assert_eq!(fit.max_tokens(&config), Some(99));
        let unbounded = GenerateConfig {
            max_tokens: None,
            ..config
        };
        assert_eq!(fit.max_tokens(&unbounded), None);
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
        // The default budget is cut to a quarter of a given context from the first request.
        let small = GenerateConfig {
            context_tokens: Some(1024),
            ..GenerateConfig::default()
        };
        assert_eq!(Fit::new(&small).max_tokens(&small), Some(256));
    }
}
