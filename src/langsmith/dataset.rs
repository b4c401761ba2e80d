//! Datasets in and out of LangSmith, losslessly.
//!
//! A row's `inputs`, `outputs` and `metadata` become the example's unchanged (spans with their
//! offsets and text, chunk ids, a reference answer, difficulty and every other field). What
//! LangSmith has no place for — the row's own id (LangSmith ids are UUIDs) and its position in
//! the file (LangSmith lists examples in its own order) — travels in one reserved metadata key,
//! [`RESERVED_KEY`], which a pull removes again. Example ids are derived from the dataset's id
//! and the row's id, so pushing the same file again changes nothing, and pushing an edited file
//! creates, updates or leaves each example as needed.

use super::client::{is_conflict, LangSmith, NewExample, RemoteExample};
use super::ids::derived_uuid;
use crate::dataset::AnyDataset;
use crate::error::{DatasetError, Error, Result};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// The metadata key holding a row's id and position (`{"id": "q0001", "position": 0}`).
pub const RESERVED_KEY: &str = "rag_eval";

/// Examples sent per request.
const BATCH: usize = 100;

/// What a push did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PushReport {
    /// The dataset's id.
    pub dataset_id: String,
    /// Whether the dataset was created (rather than found).
    pub created: bool,
    /// Examples created.
    pub examples_created: usize,
    /// Examples whose content was replaced.
    pub examples_updated: usize,
    /// Examples already as the file has them.
    pub examples_unchanged: usize,
    /// Examples in LangSmith that the file does not have (left alone), by their row id or UUID.
    pub remote_only: Vec<String>,
}

/// What a pull brought back.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Pulled {
    /// The dataset as JSONL, one row a line, in the pushed file's order (rows made elsewhere
    /// follow, in the server's order, with their UUIDs as ids).
    pub jsonl: String,
    /// Number of rows.
    pub rows: usize,
    /// The dataset's id.
    pub dataset_id: String,
}

/// The rows of a dataset as JSON objects, exactly as its file form has them.
pub fn rows_of(dataset: &AnyDataset) -> Result<Vec<Map<String, Value>>> {
    let (jsonl, source) = match dataset {
        AnyDataset::Chunk(d) => (d.to_jsonl(), d.source()),
        AnyDataset::Token(d) => (d.to_jsonl(), d.source()),
    };
    jsonl
        .lines()
        .map(|line| {
            serde_json::from_str(line).map_err(|e| {
                Error::Dataset(DatasetError::new(
                    source,
                    format!("a row does not read back as JSON: {e}"),
                ))
            })
        })
        .collect()
}

/// The example a row becomes in dataset `dataset_id`.
fn example_of(dataset_id: &str, position: usize, row: &Map<String, Value>) -> Result<NewExample> {
    let id = row.get("id").and_then(Value::as_str).unwrap_or_default();
    let object = |key: &str| -> Result<Map<String, Value>> {
        match row.get(key) {
            None | Some(Value::Null) => Ok(Map::new()),
            Some(Value::Object(m)) => Ok(m.clone()),
            Some(_) => Err(Error::Dataset(DatasetError::new(
                dataset_id,
                format!("row `{id}`: `{key}` is not an object"),
            ))),
        }
    };
    let mut metadata = object("metadata")?;
    if metadata.contains_key(RESERVED_KEY) {
        return Err(Error::Dataset(DatasetError::new(dataset_id, format!(
            "row `{id}`: metadata key `{RESERVED_KEY}` is reserved for the row's id and position in LangSmith"
        ))));
    }
    let other: Vec<&str> = row
        .keys()
        .map(String::as_str)
        .filter(|k| !matches!(*k, "id" | "inputs" | "outputs" | "metadata"))
        .collect();
    let mut reserved = serde_json::json!({"id": id, "position": position});
    if !other.is_empty() {
        // Top-level fields LangSmith has no place for ride along, so a pull restores them.
        let extra: Map<String, Value> = other
            .iter()
            .map(|k| ((*k).to_owned(), row[*k].clone()))
            .collect();
        reserved["fields"] = Value::Object(extra);
    }
    metadata.insert(RESERVED_KEY.to_owned(), reserved);
    Ok(NewExample {
        id: derived_uuid(&[dataset_id, id]),
        inputs: object("inputs")?,
        outputs: object("outputs")?,
        metadata,
    })
}

fn same_content(remote: &RemoteExample, local: &NewExample) -> bool {
    let or_empty = |m: &Option<Map<String, Value>>| m.clone().unwrap_or_default();
    or_empty(&remote.inputs) == local.inputs
        && or_empty(&remote.outputs) == local.outputs
        && or_empty(&remote.metadata) == local.metadata
}

/// Pushes `dataset` to the LangSmith dataset `name`, creating it if needed. Examples are
/// matched by their row id: missing ones are created (in batches), changed ones updated, equal
/// ones left alone; examples the file lacks are reported, never deleted. A dataset of the
/// other level under the same name is an error, and so is an empty dataset.
pub async fn push(
    client: &LangSmith,
    name: &str,
    dataset: &AnyDataset,
    description: Option<&str>,
) -> Result<PushReport> {
    let rows = rows_of(dataset)?;
    if rows.is_empty() {
        return Err(Error::Dataset(DatasetError::new(
            name,
            format!("the dataset to push as `{name}` has no rows"),
        )));
    }
    let (remote, created) = match client.find_dataset(name).await? {
        Some(d) => (d, false),
        None => {
            let mut metadata = Map::new();
            metadata.insert("level".into(), Value::from(dataset.level()));
            (
                client.create_dataset(name, description, metadata).await?,
                true,
            )
        }
    };
    if let Some(level) = remote
        .metadata
        .as_ref()
        .and_then(|m| m.get("level"))
        .and_then(Value::as_str)
    {
        if level != dataset.level() {
            return Err(Error::Dataset(DatasetError::new(
                name,
                format!(
                "LangSmith dataset `{name}` holds {level}-level examples; this dataset is {}-level",
                dataset.level()
            ),
            )));
        }
    }
    let local: Vec<NewExample> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| example_of(&remote.id, i, r))
        .collect::<Result<_>>()?;
    let existing: HashMap<String, RemoteExample> = if created {
        HashMap::new()
    } else {
        client
            .list_examples(&remote.id)
            .await?
            .into_iter()
            .map(|e| (e.id.clone(), e))
            .collect()
    };
    let mut report = PushReport {
        dataset_id: remote.id.clone(),
        created,
        examples_created: 0,
        examples_updated: 0,
        examples_unchanged: 0,
        remote_only: Vec::new(),
    };
    let mut missing = Vec::new();
    for e in &local {
        match existing.get(&e.id) {
            None => missing.push(e.clone()),
            Some(r) if same_content(r, e) => report.examples_unchanged += 1,
            Some(_) => {
                client.update_example(&remote.id, e).await?;
                report.examples_updated += 1;
            }
        }
    }
    for batch in missing.chunks(BATCH) {
        match client.create_examples(&remote.id, batch).await {
            Ok(_) => {}
            // An earlier attempt of this batch arrived but its answer did not: send only what
            // the server still lacks.
            Err(e) if is_conflict(&e) => {
                let now: HashSet<String> = client
                    .list_examples(&remote.id)
                    .await?
                    .into_iter()
                    .map(|e| e.id)
                    .collect();
                let rest: Vec<NewExample> = batch
                    .iter()
                    .filter(|e| !now.contains(&e.id))
                    .cloned()
                    .collect();
                if !rest.is_empty() {
                    client.create_examples(&remote.id, &rest).await?;
                }
            }
            Err(e) => return Err(e),
        }
        report.examples_created += batch.len();
    }
    let ours: HashSet<&str> = local.iter().map(|e| e.id.as_str()).collect();
    report.remote_only = existing
        .values()
        .filter(|e| !ours.contains(e.id.as_str()))
        .map(|e| row_id(e).unwrap_or_else(|| e.id.clone()))
        .collect();
    report.remote_only.sort();
    Ok(report)
}

fn reserved(e: &RemoteExample) -> Option<&Map<String, Value>> {
    e.metadata.as_ref()?.get(RESERVED_KEY)?.as_object()
}

fn row_id(e: &RemoteExample) -> Option<String> {
    reserved(e)?.get("id")?.as_str().map(str::to_owned)
}

/// The row a LangSmith example stands for: the pushed row as it was, or for an example made
/// elsewhere, its UUID as id and its inputs, outputs and metadata as they are.
pub fn row_of(e: &RemoteExample) -> Map<String, Value> {
    let mut row = Map::new();
    let mut metadata = e.metadata.clone().unwrap_or_default();
    let reserved = metadata.remove(RESERVED_KEY);
    let reserved = reserved.as_ref().and_then(Value::as_object);
    let id = reserved
        .and_then(|r| r.get("id"))
        .and_then(Value::as_str)
        .unwrap_or(&e.id);
    row.insert("id".into(), Value::from(id));
    row.insert(
        "inputs".into(),
        Value::Object(e.inputs.clone().unwrap_or_default()),
    );
    row.insert(
        "outputs".into(),
        Value::Object(e.outputs.clone().unwrap_or_default()),
    );
    if !metadata.is_empty() {
        row.insert("metadata".into(), Value::Object(metadata));
    }
    if let Some(fields) = reserved
        .and_then(|r| r.get("fields"))
        .and_then(Value::as_object)
    {
        for (k, v) in fields {
            row.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    row
}

/// Brings the LangSmith dataset `name` back as JSONL. The caller validates it against its
/// corpus, as any dataset.
pub async fn pull(client: &LangSmith, name: &str) -> Result<Pulled> {
    let Some(remote) = client.find_dataset(name).await? else {
        return Err(Error::Dataset(DatasetError::new(
            name,
            format!(
                "no LangSmith dataset named `{name}` at {}",
                client.endpoint()
            ),
        )));
    };
    let examples = client.list_examples(&remote.id).await?;
    let mut keyed: Vec<(Option<u64>, usize, Map<String, Value>)> = examples
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let position = reserved(e)
                .and_then(|r| r.get("position"))
                .and_then(Value::as_u64);
            (position, i, row_of(e))
        })
        .collect();
    // Pushed rows in their file order, then the others in the server's.
    keyed.sort_by_key(|(p, i, _)| (p.is_none(), p.unwrap_or(0), *i));
    let mut jsonl = String::new();
    for (_, _, row) in &keyed {
        jsonl.push_str(&serde_json::to_string(row).expect("JSON values serialise"));
        jsonl.push('\n');
    }
    Ok(Pulled {
        jsonl,
        rows: keyed.len(),
        dataset_id: remote.id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_survives_the_trip_through_an_example() {
        let row: Map<String, Value> = serde_json::from_str(
            r#"{"id":"q1","inputs":{"query":"why?"},"outputs":{"relevant_spans":[{"doc_id":"a.md","start":3,"end":9,"text":"abcdef"}],"reference_answer":"because"},"metadata":{"difficulty":"factual"},"split":"test"}"#,
        )
        .unwrap();
        let e = example_of("0b6d1c3e-8c1a-4f43-9a5e-3d2f1b0a9c8d", 7, &row).unwrap();
        assert_eq!(e.metadata[RESERVED_KEY]["position"], 7);
        let remote = RemoteExample {
            id: e.id.clone(),
            dataset_id: None,
            inputs: Some(e.inputs.clone()),
            outputs: Some(e.outputs.clone()),
            metadata: Some(e.metadata.clone()),
        };
        assert_eq!(row_of(&remote), row);
        assert!(same_content(&remote, &e));
    }

    #[test]
    fn the_reserved_key_is_refused_in_a_row() {
        let row: Map<String, Value> = serde_json::from_str(
            r#"{"id":"q1","inputs":{"query":"x"},"outputs":{},"metadata":{"rag_eval":1}}"#,
        )
        .unwrap();
        let err = example_of("d", 0, &row).unwrap_err().to_string();
        assert!(err.contains("`rag_eval` is reserved"), "{err}");
    }

    #[test]
    fn examples_made_elsewhere_keep_their_uuid_as_id() {
        let remote = RemoteExample {
            id: "0b6d1c3e-8c1a-4f43-9a5e-3d2f1b0a9c8d".into(),
            dataset_id: None,
            inputs: Some(serde_json::from_str(r#"{"query":"q"}"#).unwrap()),
            outputs: None,
            metadata: None,
        };
        let row = row_of(&remote);
        assert_eq!(row["id"], "0b6d1c3e-8c1a-4f43-9a5e-3d2f1b0a9c8d");
        assert_eq!(row["outputs"], serde_json::json!({}));
        assert!(!row.contains_key("metadata"));
    }
}
