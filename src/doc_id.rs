//! [`DocId`], the name of a document, which corpora, spans, chunks and datasets all share.
//! It depends on nothing else in the crate, so the modules that use it need not depend on
//! each other.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// Identifier of a document: its path relative to the corpus root, with `/` separators.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DocId(Arc<str>);

impl DocId {
    /// A document id from any string.
    pub fn new(id: impl AsRef<str>) -> Self {
        DocId(Arc::from(id.as_ref()))
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DocId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for DocId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<&str> for DocId {
    fn from(s: &str) -> Self {
        DocId::new(s)
    }
}

impl From<String> for DocId {
    fn from(s: String) -> Self {
        DocId(Arc::from(s))
    }
}

impl AsRef<str> for DocId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for DocId {
    fn borrow(&self) -> &str {
        &self.0
    }
}
