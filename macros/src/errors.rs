//! Errors of one macro call, gathered so that all of them are reported in one build.

use proc_macro2::TokenStream;

/// Every error found so far, combined into one `syn::Error`.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(first) => first.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// `compile_error!` invocations, one per error, each at its own span.
    pub(crate) fn to_compile_errors(&self) -> TokenStream {
        self.0
            .as_ref()
            .map(syn::Error::to_compile_error)
            .unwrap_or_default()
    }

    #[cfg(test)]
    pub(crate) fn messages(&self) -> Vec<String> {
        self.0
            .iter()
            .flat_map(|error| error.clone().into_iter())
            .map(|error| error.to_string())
            .collect()
    }
}
