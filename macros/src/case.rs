//! `#[rag_eval(...)]`: the function, unchanged, and a hidden module describing the case.

use crate::args::{self, Bound, CaseArgs, Mode};
use crate::errors::Errors;
use crate::signature::{self, Shape};
use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use std::path::Path;
use syn::ext::IdentExt;
use syn::{ItemFn, Visibility};

/// The function in a case's hidden module that `main!` calls.
pub(crate) const CASE_FN: &str = "__rag_eval_case";

/// Expands the attribute; its paths are checked against `root`, the crate root, when known.
pub(crate) fn expand(attr: TokenStream, item: TokenStream, root: Option<&Path>) -> TokenStream {
    let mut errors = Errors::default();
    let function = syn::parse2::<ItemFn>(item.clone());
    // A shape not known answers as far as the bars are concerned: its own error is enough.
    let answers = !function.as_ref().is_ok_and(|f| {
        matches!(
            signature::classify(&f.sig),
            Ok(Shape::Factory { .. } | Shape::Function { .. })
        )
    });
    let args = args::parse(attr, root, &mut errors);
    if args.conversations.is_some() {
        return expand_conversation(item, function, &args, errors);
    }
    if args.traces.is_some() {
        return expand_traced(item, function, &args, errors);
    }
    let checks = bar_checks(&args, answers);
    let Ok(function) = function else {
        errors.push(syn::Error::new(
            Span::call_site(),
            format!("#[rag_eval] goes on a function: {}", signature::SHAPES),
        ));
        let errors = errors.to_compile_errors();
        return quote!(#item #errors);
    };
    let shape = signature::classify(&function.sig)
        .map_err(|error| errors.push(error))
        .ok();
    let module = match shape {
        Some(shape) if errors.is_empty() => {
            let module = case_module(&function, &args, &shape);
            match answering(&args, &shape) {
                // The library says whether it can build a case that answers (its `answers`
                // feature); without, its error names the feature and the stub stands in.
                Some(what) => {
                    let stub = stub_module(&function);
                    quote!(::rag_eval::__rag_eval_answering!(#what { #module } else { #stub });)
                }
                None => module,
            }
        }
        // Without this module, every `main!` naming the case would add an error of its own.
        _ => stub_module(&function),
    };
    let errors = errors.to_compile_errors();
    quote!(#item #module #checks #errors)
}

/// Expands a conversation case: its function is the system, called with the conversation
/// so far; its bars are checked against the conversation figures.
fn expand_conversation(
    item: TokenStream,
    function: syn::Result<ItemFn>,
    args: &CaseArgs,
    mut errors: Errors,
) -> TokenStream {
    let Ok(function) = function else {
        errors.push(syn::Error::new(
            Span::call_site(),
            "#[rag_eval] goes on a function: a conversation case is `async fn(&[Turn]) -> AssistantTurn`",
        ));
        let errors = errors.to_compile_errors();
        return quote!(#item #errors);
    };
    let output = signature::conversation(&function.sig)
        .map_err(|error| errors.push(error))
        .ok();
    let checks: TokenStream = args
        .thresholds
        .iter()
        .map(|t| {
            let key = t.key.unraw().to_string();
            let metric = &t.metric;
            quote_spanned! {t.key.span()=>
                const _: () = {
                    const PROBLEM: ::rag_eval::__private::BarProblem =
                        ::rag_eval::__private::conversation_bar_problem(#key, #metric);
                    if !PROBLEM.is_empty() {
                        ::core::panic!("{}", PROBLEM.as_str())
                    }
                };
            }
        })
        .collect();
    let module = match output {
        Some(output) if errors.is_empty() => {
            let ident = &function.sig.ident;
            let future = quote_spanned!(first_span(output)=>
                ::std::boxed::Box::pin(async move { super::#ident(&so_far).await })
            );
            let max_steps = match args.max_steps {
                Some(n) => quote!(::core::option::Option::Some(#n)),
                None => quote!(::core::option::Option::None),
            };
            let build = quote! {
                ::rag_eval::__private::Build::Conversation(::rag_eval::__private::ConversationSystem {
                    next: |so_far: ::std::vec::Vec<::rag_eval::conversation::Turn>| #future,
                    max_steps: #max_steps,
                })
            };
            let spec = CaseArgs {
                dataset: args.conversations.clone().unwrap_or_default(),
                ..args.clone()
            };
            case_body(
                &function,
                &spec,
                quote!(::rag_eval::__private::Levels::BOTH),
                build,
                quote!(),
            )
        }
        _ => stub_module(&function),
    };
    // The library plays conversations with its `answers` feature; without, its error names
    // the feature and the stub stands in.
    let stub = stub_module(&function);
    let errors = errors.to_compile_errors();
    quote! {
        #item
        ::rag_eval::__rag_eval_answering!("it plays conversations" { #module #checks } else { #stub });
        #errors
    }
}

/// Expands a traces case: its function is the system under test, called with each row's
/// question (and id); the traces it exports are scored as an answers case's answers, so its
/// bars are checked as those of a case that answers.
fn expand_traced(
    item: TokenStream,
    function: syn::Result<ItemFn>,
    args: &CaseArgs,
    mut errors: Errors,
) -> TokenStream {
    let checks = bar_checks(args, true);
    let Ok(function) = function else {
        errors.push(syn::Error::new(
            Span::call_site(),
            format!(
                "#[rag_eval] goes on a function: {}",
                signature::TRACED_SHAPES
            ),
        ));
        let errors = errors.to_compile_errors();
        return quote!(#item #errors);
    };
    let inputs = signature::traced(&function.sig)
        .map_err(|error| errors.push(error))
        .ok();
    let module = match inputs {
        Some(inputs) if errors.is_empty() => {
            let ident = &function.sig.ident;
            let call = match inputs {
                signature::TracedInputs::Question => quote!(super::#ident(&question)),
                signature::TracedInputs::QuestionAndId => quote!(super::#ident(&question, &id)),
            };
            // The return value is dropped: the traces are what the case scores.
            let future = quote_spanned!(ident.span()=>
                ::std::boxed::Box::pin(async move {
                    let _ = #call.await;
                })
            );
            let file = args.traces.clone().unwrap_or_default();
            let join_attribute = option(args.join_attribute.as_deref());
            let retrievals = &args.retrievals;
            let timeout = args.trace_timeout_ms;
            let build = quote! {
                ::rag_eval::__private::Build::Traces(::rag_eval::__private::TracesSystem {
                    call: |question: ::std::string::String, id: ::std::string::String| #future,
                    file: #file,
                    join_attribute: #join_attribute,
                    retrievals: #retrievals,
                    timeout_ms: #timeout,
                })
            };
            case_body(
                &function,
                args,
                quote!(::rag_eval::__private::Levels::BOTH),
                build,
                quote!(),
            )
        }
        _ => stub_module(&function),
    };
    let stub = stub_module(&function);
    let errors = errors.to_compile_errors();
    quote! {
        #item
        ::rag_eval::__rag_eval_tracing!({ #module } else { #stub });
        #checks
        #errors
    }
}

/// What makes the case one that answers, if it is: the library builds it only with its
/// `answers` feature.
fn answering(args: &CaseArgs, shape: &Shape) -> Option<&'static str> {
    match shape {
        Shape::Answer { .. } => Some("it returns a `RagAnswer`"),
        Shape::Rag { .. } => Some("it returns a `Rag`"),
        _ if args.judge.is_some() => Some("`judge = …`"),
        _ if args.embedder.is_some() => Some("`embedder = …`"),
        _ if !args.criteria.is_empty() => Some("`criteria = …`"),
        Shape::Factory { .. } | Shape::Function { .. } => None,
    }
}

/// One `const` item per bar, spanned at its key, that fails to compile when the library's
/// metric registry says the bar cannot be: an unknown metric (with the closest name), an answer
/// metric on a case that does not answer, a judge's figure without `judge`, a figure comparing
/// embeddings without `embedder`. The names live in the library alone.
fn bar_checks(args: &CaseArgs, answers: bool) -> TokenStream {
    let judge = args.judge.is_some();
    let embedder = args.embedder.is_some();
    let criteria: Vec<TokenStream> = args
        .criteria
        .iter()
        .map(|c| {
            let text = criteria_text(c);
            let path = &c.path;
            quote!((#path, ::rag_eval::__private::criteria_name(#text)))
        })
        .collect();
    args.thresholds
        .iter()
        .map(|t| {
            let key = t.key.unraw().to_string();
            let metric = &t.metric;
            quote_spanned! {t.key.span()=>
                const _: () = {
                    const PROBLEM: ::rag_eval::__private::BarProblem =
                        ::rag_eval::__private::bar_problem(#key, #metric, #answers, #judge, #embedder, &[#(#criteria),*]);
                    if !PROBLEM.is_empty() {
                        ::core::panic!("{}", PROBLEM.as_str())
                    }
                };
            }
        })
        .collect()
}

/// A criteria file's text, read by the compiler: at the path's token, and rebuilt when the
/// file changes.
fn criteria_text(c: &args::CriteriaPath) -> TokenStream {
    let path = &c.path;
    if std::path::Path::new(path).is_absolute() {
        return quote_spanned!(c.span=> ::core::include_str!(#path));
    }
    quote_spanned!(c.span=> ::core::include_str!(::core::concat!(::core::env!("CARGO_MANIFEST_DIR"), "/", #path)))
}

/// The hidden module named after the function, holding `__rag_eval_case` with `body`.
fn module(function: &ItemFn, body: TokenStream, allow: TokenStream) -> TokenStream {
    let ident = &function.sig.ident;
    // A private case is still listed by path in `main!`, possibly from another module.
    let visibility = match &function.vis {
        Visibility::Inherited => quote!(pub(crate)),
        visibility => visibility.to_token_stream(),
    };
    // The module goes wherever the function goes.
    let cfgs = function
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("cfg"));
    // Spanned at the case's name: diagnostics about the hidden function point at the case.
    let case_fn = Ident::new(CASE_FN, ident.span());
    quote! {
        #(#cfgs)*
        #[doc(hidden)]
        #[allow(non_snake_case, non_camel_case_types, #allow)]
        #visibility mod #ident {
            #[allow(unused_imports)]
            use super::*;
            pub fn #case_fn() -> ::rag_eval::__private::CaseSpec {
                #body
            }
        }
    }
}

/// The module of a case with errors: enough for `main!` and for the function not to look
/// unused, nothing that could fail to compile in its turn.
fn stub_module(function: &ItemFn) -> TokenStream {
    let ident = &function.sig.ident;
    let generics = &function.sig.generics;
    let use_function = (generics.params.is_empty() && generics.where_clause.is_none())
        .then(|| quote!(let _ = super::#ident;));
    let body = quote! {
        #use_function
        ::core::unreachable!()
    };
    module(function, body, quote!(dead_code))
}

fn case_module(function: &ItemFn, args: &CaseArgs, shape: &Shape) -> TokenStream {
    let ident = &function.sig.ident;
    let (items, levels, build) = match *shape {
        Shape::Factory { output, is_async } => (
            retriever_check(),
            factory_levels(output),
            factory_build(ident, output, is_async),
        ),
        Shape::Function { output } => (
            quote!(),
            quote!(::rag_eval::__private::Levels::BOTH),
            function_build(ident, output),
        ),
        Shape::Answer { output } => (
            quote!(),
            quote!(::rag_eval::__private::Levels::BOTH),
            answer_build(ident, output),
        ),
        Shape::Rag { output, is_async } => (
            retriever_check(),
            // The retriever's type is one of the `Rag`'s parameters: the runtime asks the value.
            quote!(::rag_eval::__private::Levels::UNKNOWN),
            rag_build(ident, output, is_async),
        ),
    };
    case_body(function, args, levels, build, items)
}

/// The hidden module of a case whose retriever or system is built by `build`.
fn case_body(
    function: &ItemFn,
    args: &CaseArgs,
    levels: TokenStream,
    build: TokenStream,
    items: TokenStream,
) -> TokenStream {
    let ident = &function.sig.ident;
    let name = ident.unraw().to_string();
    let line = u32::try_from(ident.span().start().line).unwrap_or(0);
    let dataset = &args.dataset;
    let corpus = option(args.corpus.as_deref());
    let glob = option(args.glob.as_deref());
    let k = Literal::usize_suffixed(args.k);
    let tolerance = Literal::f64_suffixed(args.tolerance);
    let mode = match args.mode {
        Mode::Standard => quote!(Standard),
        Mode::ChunkingEvaluation => quote!(ChunkingEvaluation),
    };
    let per_query = args.per_query;
    let ignore = args.ignore;
    let thresholds = args.thresholds.iter().map(|threshold| {
        let metric = &threshold.metric;
        let bound = match threshold.bound {
            Bound::Min => quote!(Min),
            Bound::Max => quote!(Max),
        };
        let value = Literal::f64_suffixed(threshold.value);
        quote! {
            ::rag_eval::__private::Bar::fixed(
                #metric,
                ::rag_eval::__private::Bound::#bound,
                #value,
            )
        }
    });
    let embedder = match &args.embedder {
        Some(args::JudgePath(path)) => {
            let build = quote_spanned!(first_span(path)=> {
                let embedder = super::#path();
                ::rag_eval::__private::case_embedder(embedder)
            });
            quote!(::core::option::Option::Some(|| #build))
        }
        None => quote!(::core::option::Option::None),
    };
    let judge = match &args.judge {
        Some(args::JudgePath(path)) => {
            let samples = args.judge_samples;
            let share = Literal::f64_suffixed(args.max_invalid_share);
            let per_query = args.judge_per_query;
            let judge_tolerance = Literal::f64_suffixed(args.judge_tolerance);
            // At the path: a function of the wrong type is reported there.
            let client = quote_spanned!(first_span(path)=> {
                let client = super::#path();
                ::rag_eval::__private::judge_client(client)
            });
            quote! {
                ::core::option::Option::Some(::rag_eval::__private::JudgeSpec {
                    client: || #client,
                    samples: #samples,
                    max_invalid_share: #share,
                    per_query_snapshot: #per_query,
                    tolerance: #judge_tolerance,
                })
            }
        }
        None => quote!(::core::option::Option::None),
    };
    let langsmith_experiment = option(args.langsmith_experiment.as_deref());
    let concurrency = match args.concurrency {
        Some(n) => quote!(::core::option::Option::Some(#n)),
        None => quote!(::core::option::Option::None),
    };
    let agreement = match args.min_agreement {
        Some(min) => {
            let min = Literal::f64_suffixed(min);
            let threshold = Literal::f64_suffixed(args.agreement_threshold);
            let labels = option(args.labels.as_deref());
            quote! {
                ::core::option::Option::Some(::rag_eval::__private::AgreementSpec {
                    labels: #labels,
                    min: #min,
                    threshold: #threshold,
                })
            }
        }
        None => quote!(::core::option::Option::None),
    };
    let criteria = args.criteria.iter().map(|c| {
        let path = &c.path;
        let text = criteria_text(c);
        quote!(::rag_eval::__private::CriteriaFile { path: #path, text: #text })
    });
    let body = quote! {
        #items
        ::rag_eval::__private::CaseSpec {
            name: #name,
            manifest_dir: ::core::env!("CARGO_MANIFEST_DIR"),
            source: ::core::file!(),
            line: #line,
            dataset: #dataset,
            corpus: #corpus,
            glob: #glob,
            k: #k,
            tolerance: #tolerance,
            mode: ::rag_eval::__private::Mode::#mode,
            per_query: #per_query,
            ignore: #ignore,
            thresholds: {
                const THRESHOLDS: &[::rag_eval::__private::Bar] = &[#(#thresholds),*];
                THRESHOLDS
            },
            levels: #levels,
            build: #build,
            judge: #judge,
            criteria: &[#(#criteria),*],
            embedder: #embedder,
            langsmith_experiment: #langsmith_experiment,
            concurrency: #concurrency,
            agreement: #agreement,
        }
    };
    module(function, body, quote!())
}

fn option(value: Option<&str>) -> TokenStream {
    match value {
        Some(value) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    }
}

/// The levels the factory's return type implements, asked of the type itself.
fn factory_levels(output: &syn::Type) -> TokenStream {
    if signature::has_impl_trait(output) {
        // Only the function knows the type behind `impl Trait`; the runtime asks the value.
        return quote!(::rag_eval::__private::Levels::UNKNOWN);
    }
    let output = signature::from_child_module(output);
    quote! {
        {
            #[allow(unused_imports)]
            use ::rag_eval::__private::{
                ChunkFallback as _, ChunkImpl as _, TokenFallback as _, TokenImpl as _,
            };
            let probe = ::rag_eval::__private::TypeProbe::<#output>::new();
            ::rag_eval::__private::Levels {
                token: (&probe).token_level(),
                chunk: (&probe).chunk_level(),
            }
        }
    }
}

/// Calls the factory and sees what it returned at both levels.
fn factory_build(ident: &Ident, output: &syn::Type, is_async: bool) -> TokenStream {
    let call = if is_async {
        quote_spanned!(ident.span()=> super::#ident().await)
    } else {
        quote_spanned!(ident.span()=> super::#ident())
    };
    let check = quote_spanned!(first_span(output)=>
        (&&&RagEvalCheck::of(&retriever)).retriever_at_some_level()
    );
    quote! {
        ::rag_eval::__private::Build::Factory(|| ::std::boxed::Box::pin(async {
            #[allow(unused_imports)]
            use ::rag_eval::__private::{
                ChunkFallback as _, ChunkImpl as _, TokenFallback as _, TokenImpl as _,
            };
            let retriever = #call;
            #check;
            let probe = ::rag_eval::__private::Probe(::std::sync::Arc::new(retriever));
            ::rag_eval::__private::Retrievers {
                token: (&probe).token(),
                chunk: (&probe).chunk(),
            }
        }))
    }
}

/// Calls the function for its `Rag` and sees the retriever at both levels and the generator
/// as a `Generator`; a field of the wrong type is a compile error at the return type.
fn rag_build(ident: &Ident, output: &syn::Type, is_async: bool) -> TokenStream {
    let call = if is_async {
        quote_spanned!(ident.span()=> super::#ident().await)
    } else {
        quote_spanned!(ident.span()=> super::#ident())
    };
    let span = first_span(output);
    let parts = quote_spanned!(span=>
        let ::rag_eval::harness::Rag { retriever, generator } = #call;
    );
    let check = quote_spanned!(span=>
        (&&&RagEvalCheck::of(&retriever)).retriever_at_some_level()
    );
    let generator = quote_spanned!(span=>
        ::rag_eval::__private::CaseGenerator::shared(generator)
    );
    quote! {
        ::rag_eval::__private::Build::Rag(|| ::std::boxed::Box::pin(async {
            #[allow(unused_imports)]
            use ::rag_eval::__private::{
                ChunkFallback as _, ChunkImpl as _, TokenFallback as _, TokenImpl as _,
            };
            #parts
            #check;
            let probe = ::rag_eval::__private::Probe(::std::sync::Arc::new(retriever));
            ::rag_eval::__private::RagParts {
                retrievers: ::rag_eval::__private::Retrievers {
                    token: (&probe).token(),
                    chunk: (&probe).chunk(),
                },
                generator: #generator,
            }
        }))
    }
}

/// Items that make a factory returning a retriever at neither level a compile error at its
/// return type (`RagEvalCheck::of(&value).retriever_at_some_level()`), also when the type is
/// `impl Trait`. Method lookup tries `&&&Check`, `&&Check`, `&Check` in turn and takes the first
/// impl whose bound holds; the last one asks for a trait that nothing implements, whose message
/// says what is wrong.
fn retriever_check() -> TokenStream {
    quote! {
        struct RagEvalCheck<T>(::core::marker::PhantomData<fn() -> T>);
        impl<T> RagEvalCheck<T> {
            fn of(_: &T) -> Self {
                RagEvalCheck(::core::marker::PhantomData)
            }
        }
        #[diagnostic::on_unimplemented(
            message = "`{Self}` is not a retriever: a #[rag_eval] case returns a type that \
                       implements `Retriever<TokenLevel>` or `Retriever<ChunkLevel>`",
            label = "implements neither `Retriever<TokenLevel>` nor `Retriever<ChunkLevel>`",
            note = "a function that ranks chunks itself is a case too: \
                    `async fn(query: &str) -> Vec<RetrievedChunk>`"
        )]
        trait RagEvalRetriever {}
        trait RagEvalToken {
            fn retriever_at_some_level(&self) {}
        }
        impl<T> RagEvalToken for &&RagEvalCheck<T>
        where
            ::rag_eval::__private::TypeProbe<T>: ::rag_eval::__private::TokenImpl,
        {
        }
        trait RagEvalChunk {
            fn retriever_at_some_level(&self) {}
        }
        impl<T> RagEvalChunk for &RagEvalCheck<T>
        where
            ::rag_eval::__private::TypeProbe<T>: ::rag_eval::__private::ChunkImpl,
        {
        }
        trait RagEvalNeither {
            type Returned;
            fn retriever_at_some_level(&self)
            where
                Self::Returned: RagEvalRetriever,
            {
            }
        }
        impl<T> RagEvalNeither for RagEvalCheck<T> {
            type Returned = T;
        }
    }
}

/// Wraps the query function: an owned query in, its ranked chunks out.
fn function_build(ident: &Ident, output: &syn::Type) -> TokenStream {
    // At the return type: a future of anything but ranked chunks is reported there.
    let future = quote_spanned!(first_span(output)=>
        ::std::boxed::Box::pin(async move { super::#ident(&query).await })
    );
    quote! {
        ::rag_eval::__private::Build::Function(|query: ::std::string::String| #future)
    }
}

/// Wraps the answering function: an owned query in, its answer and contexts out.
fn answer_build(ident: &Ident, output: &syn::Type) -> TokenStream {
    let future = quote_spanned!(first_span(output)=>
        ::std::boxed::Box::pin(async move { super::#ident(&query).await })
    );
    quote! {
        ::rag_eval::__private::Build::Answer(|query: ::std::string::String| #future)
    }
}

fn first_span(tokens: impl ToTokens) -> Span {
    tokens
        .into_token_stream()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |token| token.span())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_to_string(attr: TokenStream, item: TokenStream) -> String {
        expand(attr, item, None).to_string()
    }

    #[test]
    fn a_valid_case_keeps_its_function_and_gains_a_module() {
        let item = quote!(
            fn bm25() -> Bm25Retriever {
                todo!()
            }
        );
        let out = expand_to_string(
            quote!(dataset = "d.jsonl", k = 3, min_mrr = 0.5, mode = "chroma"),
            item.clone(),
        );
        assert!(out.starts_with(&item.to_string()), "{out}");
        for part in [
            "pub (crate) mod bm25",
            "pub fn __rag_eval_case () -> :: rag_eval :: __private :: CaseSpec",
            "name : \"bm25\"",
            "dataset : \"d.jsonl\"",
            "corpus : :: core :: option :: Option :: None",
            "k : 3usize",
            "tolerance : 0.01f64",
            "mode : :: rag_eval :: __private :: Mode :: ChunkingEvaluation",
            "per_query : true",
            "Bar :: fixed (\"mrr\" , :: rag_eval :: __private :: Bound :: Min , 0.5f64 ,)",
            "TypeProbe :: < Bm25Retriever > :: new ()",
            "Build :: Factory",
            "super :: bm25 ()",
        ] {
            assert!(out.contains(part), "missing `{part}` in {out}");
        }
        assert!(!out.contains("compile_error"), "{out}");
        assert!(!out.contains(". await"), "{out}");
    }

    #[test]
    fn shapes_decide_levels_and_build() {
        let out = expand_to_string(
            quote!(dataset = "d"),
            quote!(
                pub async fn f() -> impl Retriever<TokenLevel> {
                    x
                }
            ),
        );
        assert!(out.contains("pub mod f"), "{out}");
        assert!(out.contains("Levels :: UNKNOWN"), "{out}");
        assert!(out.contains("super :: f () . await"), "{out}");

        let out = expand_to_string(
            quote!(dataset = "d"),
            quote!(
                pub(super) async fn f(q: &str) -> Vec<RetrievedChunk> {
                    x
                }
            ),
        );
        assert!(out.contains("pub (super) mod f"), "{out}");
        assert!(out.contains("Levels :: BOTH"), "{out}");
        assert!(out.contains("Build :: Function"), "{out}");
        assert!(out.contains("super :: f (& query) . await"), "{out}");
    }

    #[test]
    fn a_rag_case_builds_its_parts_and_names_its_keys() {
        let out = expand_to_string(
            quote!(
                dataset = "d",
                judge = j,
                embedder = e::hashing,
                langsmith_experiment = "x"
            ),
            quote!(
                async fn f() -> Rag<Bm25Retriever, G> {
                    x
                }
            ),
        );
        for part in [
            "Build :: Rag",
            "let :: rag_eval :: harness :: Rag { retriever , generator } = super :: f () . await ;",
            "RagEvalCheck :: of (& retriever)",
            "CaseGenerator :: shared (generator)",
            "Levels :: UNKNOWN",
            "super :: e :: hashing ()",
            "langsmith_experiment : :: core :: option :: Option :: Some (\"x\")",
        ] {
            assert!(out.contains(part), "missing `{part}` in {out}");
        }
        assert!(!out.contains("compile_error"), "{out}");
    }

    #[test]
    fn cfg_attributes_follow_the_function() {
        let out = expand_to_string(
            quote!(dataset = "d"),
            quote!(
                #[cfg(feature = "slow")]
                #[inline]
                fn f() -> R {
                    x
                }
            ),
        );
        let module = &out[out.find("# [doc (hidden)]").unwrap() - 30..];
        assert!(module.contains("# [cfg (feature = \"slow\")]"), "{out}");
        assert!(!module.contains("inline"), "{out}");
    }

    #[test]
    fn errors_keep_the_function_and_a_stub_module() {
        let item = quote!(
            fn f(a: u8, b: u8) -> R {
                x
            }
        );
        let out = expand_to_string(quote!(k = 0), item.clone());
        assert!(out.starts_with(&item.to_string()), "{out}");
        assert!(out.contains("mod f"), "{out}");
        assert!(out.contains("unreachable"), "{out}");
        assert_eq!(out.matches("compile_error").count(), 3, "{out}");

        let out = expand_to_string(
            quote!(dataset = "d"),
            quote!(
                struct S;
            ),
        );
        assert!(out.starts_with("struct S ;"), "{out}");
        assert!(out.contains("#[rag_eval] goes on a function"), "{out}");
    }
}
