//! Validates JUnit XML against the committed schema (`tests/fixtures/junit/junit.xsd`) with
//! `xmllint` from libxml2 (Debian's libxml2-utils, installed by `.ci/chromium.sh`).

use std::path::Path;
use std::process::Command;

/// `Some(Ok)` when `xml` is valid, `Some(Err(why))` when not, `None` (with a `skipped:`
/// notice) when `xmllint` is not installed.
pub fn validate(xml: &Path) -> Option<Result<(), String>> {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/junit/junit.xsd");
    let out = match Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&schema)
        .arg(xml)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            eprintln!("skipped: no xmllint to validate JUnit against its schema ({e}); install libxml2-utils");
            return None;
        }
    };
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    Some(if out.status.success() {
        Ok(())
    } else {
        Err(stderr)
    })
}
