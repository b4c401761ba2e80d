//! Opening the cache a spec names: `rw`, `off` or `replay`, each with an optional `path`.

#[cfg(feature = "cache")]
use crate::spec::{Kind, Spec};

/// Opens the cache a spec such as `replay:path=golden/cache.sqlite` names (`off` opens
/// nothing).
#[cfg(feature = "cache")]
pub fn open_cache(text: &str) -> crate::Result<crate::cache::Cache> {
    use crate::cache::{Cache, CacheMode, DEFAULT_PATH};
    let spec = Spec::parse(Kind::Cache, text)?;
    let mode: CacheMode = spec.name().parse()?;
    let path = spec.text("path").unwrap_or(DEFAULT_PATH);
    Cache::open(path, mode)
}

/// The spec of an open cache, e.g. `replay:path=golden/cache.sqlite`.
#[cfg(feature = "cache")]
pub fn cache_spec(cache: &crate::cache::Cache) -> String {
    let spec = Spec::new(cache.mode().as_str());
    match cache.mode() {
        crate::cache::CacheMode::Off => spec,
        _ => spec.with("path", cache.path().as_str()),
    }
    .to_string()
}

#[cfg(all(test, feature = "cache"))]
mod tests {
    use super::*;

    #[test]
    fn caches_print_the_spec_that_opens_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c,1.sqlite");
        let rw = open_cache(&format!("rw:path=\"{}\"", path.display())).unwrap();
        assert_eq!(rw.path().as_str(), path.to_str().unwrap());
        let again = open_cache(&cache_spec(&rw)).unwrap();
        assert_eq!(cache_spec(&again), cache_spec(&rw));
        drop((rw, again));
        let replay = open_cache(&format!("replay:path=\"{}\"", path.display())).unwrap();
        assert_eq!(replay.mode(), crate::cache::CacheMode::Replay);
        assert_eq!(cache_spec(&open_cache("off").unwrap()), "off");
        let e = open_cache("replay:path=/nonexistent/x.sqlite")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("x.sqlite"), "{e}");
        let e = open_cache("replai").err().unwrap().to_string();
        assert!(
            e.contains("unknown cache `replai` (did you mean `replay`?); known: rw, off, replay"),
            "{e}"
        );
    }
}
