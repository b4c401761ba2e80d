//! The two function shapes a case can have.

use proc_macro2::{Group, Ident, TokenStream, TokenTree};
use quote::ToTokens;
use syn::{FnArg, ReturnType, Signature, Type};

macro_rules! shapes {
    () => {
        "`fn() -> impl Retriever<…>`, `fn() -> Rag<R, G>` (a retriever and a generator), `async fn(&str) -> Vec<RetrievedChunk>` or `async fn(&str) -> RagAnswer`"
    };
}

/// The shapes, for messages.
pub(crate) const SHAPES: &str = shapes!();

/// The start of every message about a signature of neither shape.
pub(crate) const NEITHER_SHAPE: &str = concat!("a #[rag_eval] case is ", shapes!());

pub(crate) enum Shape<'a> {
    /// `fn NAME() -> T` / `async fn NAME() -> T`: builds the retriever.
    Factory { output: &'a Type, is_async: bool },
    /// `async fn NAME(query: &str) -> Vec<RetrievedChunk>`: is the retriever.
    Function { output: &'a Type },
    /// `async fn NAME(query: &str) -> RagAnswer`: answers, with the contexts it used.
    Answer { output: &'a Type },
    /// `fn NAME() -> Rag<R, G>` / `async fn NAME() -> Rag<R, G>`: builds a retriever and a
    /// generator.
    Rag { output: &'a Type, is_async: bool },
}

/// Which shape `sig` has, or an error at the part that fits neither.
pub(crate) fn classify(sig: &Signature) -> syn::Result<Shape<'_>> {
    let fail = |tokens: &dyn ToTokens, why: &str| {
        Err(syn::Error::new_spanned(
            tokens,
            format!("{NEITHER_SHAPE}; {why}"),
        ))
    };
    if let syn::Safety::Unsafe(unsafety) = &sig.safety {
        return fail(unsafety, "this one is `unsafe`");
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return fail(&sig.generics, "this one is generic");
    }
    if let Some(variadic) = &sig.variadic {
        return fail(variadic, "this one is variadic");
    }
    let output = match &sig.output {
        ReturnType::Type(_, output) if !is_unit(output) => &**output,
        ReturnType::Type(..) => return fail(&sig.output, "this one returns `()`"),
        ReturnType::Default => return fail(&sig.ident, "this one returns nothing"),
    };
    match sig.inputs.len() {
        0 if is_named(output, "Rag") => Ok(Shape::Rag {
            output,
            is_async: sig.asyncness.is_some(),
        }),
        0 => Ok(Shape::Factory {
            output,
            is_async: sig.asyncness.is_some(),
        }),
        1 => {
            let ty = match &sig.inputs[0] {
                FnArg::Typed(typed) => &*typed.ty,
                FnArg::Receiver(receiver) => return fail(receiver, "this one takes `self`"),
            };
            if !is_str_ref(ty) {
                return fail(ty, "the query parameter must be `&str`");
            }
            if sig.asyncness.is_none() {
                return fail(&sig.fn_token, "a function taking the query must be `async`");
            }
            if is_named(output, "RagAnswer") {
                return Ok(Shape::Answer { output });
            }
            if is_named(output, "Rag") {
                return fail(
                    &sig.inputs,
                    "a function returning a `Rag` takes no parameters: the harness retrieves and generates for each query",
                );
            }
            if !is_named(output, "Vec") {
                return fail(
                    output,
                    "a function taking the query must return `Vec<RetrievedChunk>` or `RagAnswer`",
                );
            }
            Ok(Shape::Function { output })
        }
        n => fail(
            &sig.inputs,
            &format!("this one takes {n} parameters; a query function takes the query alone"),
        ),
    }
}

/// The return type of a conversation case's function, `async fn(&[Turn]) -> AssistantTurn`
/// (any one parameter lent by reference: the conversation so far; its type and the return
/// type are the compiler's to check), or an error at the part that does not fit.
pub(crate) fn conversation(sig: &Signature) -> syn::Result<&Type> {
    let fail = |tokens: &dyn ToTokens, why: &str| {
        Err(syn::Error::new_spanned(
            tokens,
            format!("a conversation case (`conversations = …`) is `async fn(&[Turn]) -> AssistantTurn`; {why}"),
        ))
    };
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return fail(&sig.generics, "this one is generic");
    }
    if sig.asyncness.is_none() {
        return fail(&sig.fn_token, "this one is not `async`");
    }
    let output = match &sig.output {
        ReturnType::Type(_, output) if !is_unit(output) => &**output,
        _ => return fail(&sig.ident, "this one returns nothing"),
    };
    if sig.inputs.len() != 1 {
        return fail(
            &sig.inputs,
            &format!(
                "this one takes {} parameters, not the conversation so far alone",
                sig.inputs.len()
            ),
        );
    }
    match &sig.inputs[0] {
        FnArg::Typed(typed) if matches!(&*typed.ty, Type::Reference(r) if r.mutability.is_none()) => {
            Ok(output)
        }
        FnArg::Typed(typed) => fail(&typed.ty, "the conversation so far is lent: `&[Turn]`"),
        FnArg::Receiver(receiver) => fail(receiver, "this one takes `self`"),
    }
}

/// What a traces case's function takes: the question alone, or the question and the row's
/// id.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TracedInputs {
    Question,
    QuestionAndId,
}

/// The message every traces case's signature error starts with.
pub(crate) const TRACED_SHAPES: &str = "a traces case (`traces = …`) is the system's entry point, `async fn(question: &str)` or `async fn(question: &str, id: &str)` (the row's id, to put on its spans for `join_attribute`), returning anything";

/// What a traces case's function takes, or an error at the part that does not fit. Its
/// return value is not read: the traces are.
pub(crate) fn traced(sig: &Signature) -> syn::Result<TracedInputs> {
    let fail = |tokens: &dyn ToTokens, why: &str| {
        Err(syn::Error::new_spanned(
            tokens,
            format!("{TRACED_SHAPES}; {why}"),
        ))
    };
    if let syn::Safety::Unsafe(unsafety) = &sig.safety {
        return fail(unsafety, "this one is `unsafe`");
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return fail(&sig.generics, "this one is generic");
    }
    if let Some(variadic) = &sig.variadic {
        return fail(variadic, "this one is variadic");
    }
    if sig.asyncness.is_none() {
        return fail(&sig.fn_token, "this one is not `async`");
    }
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(receiver) => return fail(receiver, "this one takes `self`"),
            FnArg::Typed(typed) if !is_str_ref(&typed.ty) => {
                return fail(&typed.ty, "the question and the id are `&str`")
            }
            FnArg::Typed(_) => {}
        }
    }
    match sig.inputs.len() {
        1 => Ok(TracedInputs::Question),
        2 => Ok(TracedInputs::QuestionAndId),
        0 => fail(&sig.ident, "this one takes no question"),
        n => fail(&sig.inputs, &format!("this one takes {n} parameters")),
    }
}

fn is_unit(ty: &Type) -> bool {
    match ty {
        Type::Tuple(tuple) => tuple.elems.is_empty(),
        Type::Paren(paren) => is_unit(&paren.elem),
        Type::Group(group) => is_unit(&group.elem),
        _ => false,
    }
}

/// `&str` or `&'a str` (not `&mut`): the query is lent for the call.
fn is_str_ref(ty: &Type) -> bool {
    match ty {
        Type::Reference(reference) => {
            reference.mutability.is_none()
                && matches!(&*reference.elem, Type::Path(path)
                    if path.qself.is_none() && path.path.is_ident("str"))
        }
        Type::Group(group) => is_str_ref(&group.elem),
        _ => false,
    }
}

/// Whether the type's path ends in `name` (`Vec<…>`, `rag_eval::generator::RagAnswer`).
fn is_named(ty: &Type, name: &str) -> bool {
    match ty {
        Type::Path(path) => path
            .path
            .segments
            .last()
            .is_some_and(|segment| segment.ident == name),
        Type::Group(group) => is_named(&group.elem, name),
        _ => false,
    }
}

/// Whether `ty` mentions `impl Trait` anywhere, making it unnameable outside the function.
pub(crate) fn has_impl_trait(ty: &Type) -> bool {
    fn walk(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|token| match token {
            TokenTree::Ident(ident) => ident == "impl",
            TokenTree::Group(group) => walk(group.stream()),
            _ => false,
        })
    }
    walk(ty.to_token_stream())
}

/// `ty` as written inside the case's hidden module, one level below the function: a path that
/// starts at `self` or `super` would otherwise resolve from the wrong module.
pub(crate) fn from_child_module(ty: &Type) -> TokenStream {
    fn rebase(tokens: TokenStream) -> TokenStream {
        let mut out = Vec::new();
        // Consecutive `:` just before the current token: two or more end a path separator.
        let mut colons = 0;
        for token in tokens {
            let before = colons;
            let after_separator = before >= 2;
            colons = 0;
            match token {
                TokenTree::Ident(ident) if !after_separator && ident == "self" => {
                    out.push(TokenTree::Ident(Ident::new("super", ident.span())));
                }
                TokenTree::Ident(ident) if !after_separator && ident == "super" => {
                    let span = ident.span();
                    out.extend(quote::quote_spanned!(span=> super::));
                    out.push(TokenTree::Ident(ident));
                }
                TokenTree::Punct(punct) if punct.as_char() == ':' => {
                    colons = before + 1;
                    out.push(TokenTree::Punct(punct));
                }
                TokenTree::Group(group) => {
                    let mut rebased = Group::new(group.delimiter(), rebase(group.stream()));
                    rebased.set_span(group.span());
                    out.push(TokenTree::Group(rebased));
                }
                other => out.push(other),
            }
        }
        out.into_iter().collect()
    }
    rebase(ty.to_token_stream())
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn shape_of(item: TokenStream) -> Result<String, String> {
        let item: syn::ItemFn = syn::parse2(item).unwrap();
        classify(&item.sig)
            .map(|shape| match shape {
                Shape::Factory { output, is_async } => format!(
                    "factory{} -> {}",
                    if is_async { " (async)" } else { "" },
                    output.to_token_stream()
                ),
                Shape::Function { output } => format!("function -> {}", output.to_token_stream()),
                Shape::Answer { output } => format!("answer -> {}", output.to_token_stream()),
                Shape::Rag { output, is_async } => format!(
                    "rag{} -> {}",
                    if is_async { " (async)" } else { "" },
                    output.to_token_stream()
                ),
            })
            .map_err(|error| {
                let why = error.to_string();
                why.strip_prefix(NEITHER_SHAPE).unwrap_or(&why).to_owned()
            })
    }

    #[test]
    fn accepts_the_two_shapes() {
        assert_eq!(
            shape_of(quote!(
                fn a() -> Bm25 {}
            ))
            .unwrap(),
            "factory -> Bm25"
        );
        assert_eq!(
            shape_of(quote!(
                async fn a() -> impl Retriever<TokenLevel> {}
            ))
            .unwrap(),
            "factory (async) -> impl Retriever < TokenLevel >"
        );
        assert_eq!(
            shape_of(quote!(
                async fn a(q: &str) -> Vec<RetrievedChunk> {}
            ))
            .unwrap(),
            "function -> Vec < RetrievedChunk >"
        );
        assert_eq!(
            shape_of(quote!(
                async fn a(q: &str) -> rag_eval::generator::RagAnswer {}
            ))
            .unwrap(),
            "answer -> rag_eval :: generator :: RagAnswer"
        );
        assert_eq!(
            shape_of(quote!(
                async fn a(_: &'static str) -> std::vec::Vec<R> {}
            ))
            .unwrap(),
            "function -> std :: vec :: Vec < R >"
        );
        assert_eq!(
            shape_of(quote!(
                fn a() -> Rag<Bm25Retriever, LlmGenerator<C>> {}
            ))
            .unwrap(),
            "rag -> Rag < Bm25Retriever , LlmGenerator < C > >"
        );
        assert_eq!(
            shape_of(quote!(
                async fn a() -> rag_eval::harness::Rag<R, G> {}
            ))
            .unwrap(),
            "rag (async) -> rag_eval :: harness :: Rag < R , G >"
        );
    }

    #[test]
    fn says_why_a_signature_fits_neither() {
        let why = |item| shape_of(item).unwrap_err();
        assert_eq!(
            why(quote!(
                fn a() {}
            )),
            "; this one returns nothing"
        );
        assert_eq!(
            why(quote!(
                fn a() -> () {}
            )),
            "; this one returns `()`"
        );
        assert_eq!(
            why(quote!(
                fn a<R>() -> R {}
            )),
            "; this one is generic"
        );
        assert_eq!(
            why(quote!(
                fn a() -> R
                where
                    R: Sized,
                {
                }
            )),
            "; this one is generic"
        );
        assert_eq!(
            why(quote!(
                unsafe fn a() -> R {}
            )),
            "; this one is `unsafe`"
        );
        assert_eq!(
            why(quote!(
                fn a(q: &str) -> Vec<R> {}
            )),
            "; a function taking the query must be `async`"
        );
        assert_eq!(
            why(quote!(
                async fn a(q: String) -> Vec<R> {}
            )),
            "; the query parameter must be `&str`"
        );
        assert_eq!(
            why(quote!(
                async fn a(q: &mut str) -> Vec<R> {}
            )),
            "; the query parameter must be `&str`"
        );
        assert_eq!(
            why(quote!(
                async fn a(q: &str) -> Option<R> {}
            )),
            "; a function taking the query must return `Vec<RetrievedChunk>` or `RagAnswer`"
        );
        assert_eq!(
            why(quote!(
                async fn a(q: &str) -> Rag<R, G> {}
            )),
            "; a function returning a `Rag` takes no parameters: the harness retrieves and generates for each query"
        );
        assert_eq!(
            why(quote!(
                async fn a(q: &str, k: usize) -> Vec<R> {}
            )),
            "; this one takes 2 parameters; a query function takes the query alone"
        );
    }

    #[test]
    fn a_traces_case_takes_the_question_and_maybe_the_id() {
        let inputs = |item: TokenStream| {
            let item: syn::ItemFn = syn::parse2(item).unwrap();
            traced(&item.sig).map_err(|e| {
                let why = e.to_string();
                why.strip_prefix(TRACED_SHAPES).unwrap_or(&why).to_owned()
            })
        };
        assert_eq!(
            inputs(quote!(
                async fn a(q: &str) {}
            )),
            Ok(TracedInputs::Question)
        );
        assert_eq!(
            inputs(quote!(
                async fn a(q: &str, id: &'static str) -> Result<String, E> {}
            )),
            Ok(TracedInputs::QuestionAndId)
        );
        for (item, why) in [
            (
                quote!(
                    fn a(q: &str) {}
                ),
                "; this one is not `async`",
            ),
            (
                quote!(
                    async fn a() {}
                ),
                "; this one takes no question",
            ),
            (
                quote!(
                    async fn a(q: String) {}
                ),
                "; the question and the id are `&str`",
            ),
            (
                quote!(
                    async fn a(q: &str, id: u64) {}
                ),
                "; the question and the id are `&str`",
            ),
            (
                quote!(
                    async fn a(q: &str, id: &str, k: &str) {}
                ),
                "; this one takes 3 parameters",
            ),
            (
                quote!(
                    async fn a<T>(q: &str) {}
                ),
                "; this one is generic",
            ),
        ] {
            assert_eq!(inputs(item).unwrap_err(), why);
        }
    }

    #[test]
    fn finds_impl_trait_anywhere_in_a_type() {
        let has = |ty: TokenStream| has_impl_trait(&syn::parse2(ty).unwrap());
        assert!(has(quote!(impl Retriever<TokenLevel>)));
        assert!(has(quote!(Box<impl Retriever<TokenLevel>>)));
        assert!(has(quote!((u8, Vec<impl Send>))));
        assert!(!has(quote!(Box<dyn Retriever<TokenLevel>>)));
        assert!(!has(quote!(Bm25Retriever)));
    }

    #[test]
    fn relative_paths_are_rebased_for_the_child_module() {
        let rebased = |ty: TokenStream| {
            from_child_module(&syn::parse2(ty).unwrap())
                .to_string()
                .replace(' ', "")
        };
        assert_eq!(rebased(quote!(self::R)), "super::R");
        assert_eq!(rebased(quote!(super::R)), "super::super::R");
        assert_eq!(rebased(quote!(super::super::R)), "super::super::super::R");
        assert_eq!(
            rebased(quote!(Box<self::a::R<super::T>>)),
            "Box<super::a::R<super::super::T>>"
        );
        assert_eq!(rebased(quote!(crate::a::R)), "crate::a::R");
        assert_eq!(rebased(quote!(::std::vec::Vec<R>)), "::std::vec::Vec<R>");
        assert_eq!(rebased(quote!(R)), "R");
    }
}
