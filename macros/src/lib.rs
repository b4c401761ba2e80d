//! Procedural macros of rag-eval: the `#[rag_eval(...)]` case attribute and `main!`.
//!
//! Use them through the `rag-eval` crate, which re-exports them and provides everything their
//! expansions call (`rag_eval::__private`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod args;
mod case;
mod errors;
mod main_list;
mod signature;
mod suggest;

use proc_macro::TokenStream;

/// Declares a retrieval evaluation case; see the `rag-eval` crate.
#[proc_macro_attribute]
pub fn rag_eval(attr: TokenStream, item: TokenStream) -> TokenStream {
    // Paths in the attribute are relative to the crate being compiled, which cargo names here.
    let root = std::env::var_os("CARGO_MANIFEST_DIR").map(std::path::PathBuf::from);
    case::expand(attr.into(), item.into(), root.as_deref()).into()
}

/// Expands the test binary's `main` running the listed cases; see the `rag-eval` crate.
#[proc_macro]
pub fn main(input: TokenStream) -> TokenStream {
    main_list::expand(input.into()).into()
}
