//! `main!(case, path::to::case, …)`: the test binary's `main`, running the listed cases.

use crate::case::CASE_FN;
use crate::errors::Errors;
use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::Path;

pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let cases = parse(input, &mut errors);
    let case_fns = cases.iter().map(|path| {
        let case_fn = Ident::new(CASE_FN, first_span(path));
        quote_spanned!(first_span(path)=> #path::#case_fn)
    });
    if !errors.is_empty() {
        let errors = errors.to_compile_errors();
        // A `main` all the same, or the binary also reports that it has none, and one that
        // names the well-formed cases, or they are reported as unused.
        return quote! {
            #errors
            fn main() -> ::std::process::ExitCode {
                let _ = (#(#case_fns,)*);
                ::core::unreachable!()
            }
        };
    }
    let calls = case_fns.map(|case_fn| quote!(#case_fn()));
    quote! {
        fn main() -> ::std::process::ExitCode {
            ::rag_eval::__private::run(
                ::std::vec![#(#calls),*],
                ::rag_eval::__private::insta_hook!(),
            )
        }
    }
}

/// The listed paths, in order. Problems go to `errors`, all of them.
fn parse(input: TokenStream, errors: &mut Errors) -> Vec<Path> {
    let mut cases: Vec<Path> = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for entry in split_at_commas(input) {
        let entry = match entry {
            Entry::Tokens(tokens) => tokens,
            Entry::Empty(comma) => {
                errors.push(syn::Error::new(
                    comma,
                    "expected the path of a #[rag_eval] function before this comma",
                ));
                continue;
            }
        };
        let path = match syn::parse2::<Path>(entry.clone()) {
            Ok(path) if path.segments.iter().all(|s| s.arguments.is_none()) => path,
            _ => {
                let text = entry.to_string();
                errors.push(syn::Error::new_spanned(
                    entry,
                    format!("expected the path of a #[rag_eval] function, found `{text}`"),
                ));
                continue;
            }
        };
        let text = path.to_token_stream().to_string().replace(' ', "");
        let key = path_text(&path);
        // A case's tests are named after its function, whatever module it is in.
        let name = path
            .segments
            .last()
            .map(|segment| segment.ident.unraw().to_string())
            .unwrap_or_default();
        if seen.iter().any(|(listed, _)| *listed == key) {
            errors.push(syn::Error::new_spanned(
                &path,
                format!("case `{text}` is listed twice"),
            ));
            continue;
        }
        if let Some((listed, _)) = seen.iter().find(|(_, listed_name)| *listed_name == name) {
            let listed = listed.clone();
            errors.push(syn::Error::new_spanned(
                &path,
                format!(
                    "case `{text}` has the same name as `{listed}`: the tests of both would be \
                     named `{name}::…`; rename one of the functions"
                ),
            ));
            continue;
        }
        seen.push((key, name));
        cases.push(path);
    }
    if cases.is_empty() && errors.is_empty() {
        errors.push(syn::Error::new(
            Span::call_site(),
            "`main!` needs at least one case: `rag_eval::main!(my_case, module::other_case)`",
        ));
    }
    cases
}

enum Entry {
    Tokens(TokenStream),
    /// Nothing between two commas, or before the first: the span of the comma.
    Empty(Span),
}

/// The comma-separated entries; one trailing comma is allowed.
fn split_at_commas(input: TokenStream) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut current = Vec::new();
    for token in input {
        match token {
            TokenTree::Punct(punct) if punct.as_char() == ',' => {
                entries.push(if current.is_empty() {
                    Entry::Empty(punct.span())
                } else {
                    Entry::Tokens(current.drain(..).collect())
                });
            }
            other => current.push(other),
        }
    }
    if !current.is_empty() {
        entries.push(Entry::Tokens(current.into_iter().collect()));
    }
    entries
}

/// The path as written, with `self::` dropped: `self::a` and `a` are the same case.
fn path_text(path: &Path) -> String {
    let text = path.to_token_stream().to_string().replace(' ', "");
    text.strip_prefix("self::")
        .map(str::to_owned)
        .unwrap_or(text)
}

fn first_span(path: &Path) -> Span {
    path.to_token_stream()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |token| token.span())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(input: TokenStream) -> Vec<String> {
        let mut errors = Errors::default();
        parse(input, &mut errors);
        errors.messages()
    }

    #[test]
    fn lists_paths_in_order_with_an_optional_trailing_comma() {
        let mut errors = Errors::default();
        let cases = parse(quote!(a, m::b, ::krate::c, r#type,), &mut errors);
        assert!(errors.is_empty());
        let texts: Vec<String> = cases.iter().map(path_text).collect();
        assert_eq!(texts, ["a", "m::b", "::krate::c", "r#type"]);
    }

    #[test]
    fn expands_to_main_calling_each_case() {
        let out = expand(quote!(a, m::b)).to_string();
        assert!(
            out.contains(
                "vec ! [a :: __rag_eval_case () , m :: b :: __rag_eval_case ()] , \
                 :: rag_eval :: __private :: insta_hook ! ()"
            ),
            "{out}"
        );
        assert!(
            out.starts_with("fn main () -> :: std :: process :: ExitCode"),
            "{out}"
        );
    }

    #[test]
    fn reports_every_problem_of_the_list() {
        assert_eq!(
            messages(quote!(a, b, a, "c", m::b, x(), self::b, , d<T>)),
            [
                "case `a` is listed twice",
                "expected the path of a #[rag_eval] function, found `\"c\"`",
                "case `m::b` has the same name as `b`: the tests of both would be named \
                 `b::…`; rename one of the functions",
                "expected the path of a #[rag_eval] function, found `x ()`",
                "case `self::b` is listed twice",
                "expected the path of a #[rag_eval] function before this comma",
                "expected the path of a #[rag_eval] function, found `d < T >`",
            ]
        );
    }

    #[test]
    fn an_empty_list_is_an_error() {
        let expected =
            ["`main!` needs at least one case: `rag_eval::main!(my_case, module::other_case)`"];
        assert_eq!(messages(quote!()), expected);
        assert_eq!(
            messages(quote!(,)),
            ["expected the path of a #[rag_eval] function before this comma"]
        );
        let out = expand(quote!()).to_string();
        assert!(
            out.contains("compile_error") && out.contains("fn main"),
            "{out}"
        );
    }
}
