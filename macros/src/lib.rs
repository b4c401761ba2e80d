//! Procedural macros of rag-eval. Use them through the `rag-eval` crate, which re-exports them
//! and provides everything their expansions call.
use proc_macro::TokenStream;

/// Declares a retrieval evaluation case; see the `rag-eval` crate.
#[proc_macro_attribute]
pub fn rag_eval(_attr: TokenStream, item: TokenStream) -> TokenStream {
    item
}

/// Expands the test binary's `main` running the listed cases; see the `rag-eval` crate.
#[proc_macro]
pub fn main(_input: TokenStream) -> TokenStream {
    TokenStream::new()
}
