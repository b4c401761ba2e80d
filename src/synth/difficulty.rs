//! How hard a question is, and the share of each difficulty a run aims for.

use crate::error::{Error, Result, SettingError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// How hard a question is for a retriever (the four classes of the difficulty breakdown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Difficulty {
    /// One fact stated explicitly in one place, asked in words close to the text's.
    Factual,
    /// Needs several statements put together: compared, listed, or followed step by step.
    Analytical,
    /// The answer is not stated outright; it follows from what the text says.
    Inferential,
    /// A stated fact asked in different words (synonyms, rephrasing), so that word overlap
    /// with the text is small.
    Paraphrased,
}

impl Difficulty {
    /// All four, in order.
    pub const ALL: [Difficulty; 4] = [
        Difficulty::Factual,
        Difficulty::Analytical,
        Difficulty::Inferential,
        Difficulty::Paraphrased,
    ];

    /// The lowercase label, as written in datasets.
    pub fn as_str(self) -> &'static str {
        match self {
            Difficulty::Factual => "factual",
            Difficulty::Analytical => "analytical",
            Difficulty::Inferential => "inferential",
            Difficulty::Paraphrased => "paraphrased",
        }
    }
}

impl fmt::Display for Difficulty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Difficulty {
    type Err = Error;
    /// Case-insensitive; surrounding whitespace ignored.
    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim();
        Difficulty::ALL
            .into_iter()
            .find(|d| d.as_str().eq_ignore_ascii_case(t))
            .ok_or_else(|| Error::Unknown {
                what: "difficulty",
                given: t.to_owned(),
                known: "expected factual, analytical, inferential or paraphrased".into(),
            })
    }
}

/// Parses a difficulty mix such as `factual=0.4,analytical=0.3,inferential=0.3`. Shares must be
/// finite and non-negative and sum to 1 (within [`MIX_SUM_TOLERANCE`]). A difficulty left out
/// gets share 0.
pub fn parse_mix(s: &str) -> Result<BTreeMap<Difficulty, f64>> {
    let mut mix = BTreeMap::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, share) = part.split_once('=').ok_or_else(|| {
            SettingError::new(
                "difficulty mix",
                "entry",
                format!("`{part}`"),
                "is not `difficulty=share`",
            )
        })?;
        let d: Difficulty = name.parse()?;
        let share: f64 = share.trim().parse().map_err(|_| {
            SettingError::new(
                "difficulty mix",
                format!("the share of `{d}`"),
                format!("`{}`", share.trim()),
                "must be a number",
            )
        })?;
        if mix.insert(d, share).is_some() {
            return Err(SettingError::new(
                "difficulty mix",
                format!("`{d}`"),
                format!("a second share ({share})"),
                "must be named once",
            )
            .into());
        }
    }
    check_mix(&mix)?;
    Ok(mix)
}

/// How far from 1 the shares of a difficulty mix may sum: enough for shares written with three
/// decimals (`0.333` three times), not enough to hide a typo such as `0.4,0.3,0.4`.
pub const MIX_SUM_TOLERANCE: f64 = 1e-3;

/// Shares that are not all meant as fractions of the whole (`factual=4,analytical=6`, or a
/// forgotten entry) are refused rather than silently rescaled: the user sees the sum.
pub(crate) fn check_mix(mix: &BTreeMap<Difficulty, f64>) -> Result<()> {
    if let Some((d, s)) = mix.iter().find(|(_, s)| !s.is_finite() || **s < 0.0) {
        return Err(SettingError::new(
            "difficulty mix",
            format!("the share of `{d}`"),
            s,
            "must be a non-negative number",
        )
        .into());
    }
    let sum: f64 = mix.values().sum();
    // The margin keeps the boundary itself (0.999) on the accepted side despite rounding.
    if (sum - 1.0).abs() > MIX_SUM_TOLERANCE + 1e-12 {
        let shares: Vec<String> = mix.iter().map(|(d, s)| format!("{d}={s}")).collect();
        // Rounded so that 0.4 + 0.3 reads 0.7, not 0.7000000000000001.
        let shown = (sum * 1e6).round() / 1e6;
        return Err(SettingError::new(
            "difficulty mix",
            "the shares",
            format!("{} = {shown}", shares.join(" + ")),
            "must sum to 1",
        )
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn difficulty_mix_parses_and_rejects_nonsense() {
        let m = parse_mix("factual=0.4, Analytical=0.6").unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[&Difficulty::Analytical], 0.6);
        // Three decimals are close enough; a whole share missing is not.
        assert!(parse_mix("factual=0.333,analytical=0.333,inferential=0.333").is_ok());
        assert!(parse_mix("factual=1").is_ok());
        for (bad, msg) in [
            ("factual", "is not `difficulty=share`"),
            (
                "factual=x",
                "the share of `factual` must be a number, got `x`",
            ),
            ("easy=1", "unknown difficulty `easy`"),
            ("factual=-1", "must be a non-negative number, got -1"),
            ("factual=0", "the shares must sum to 1, got factual=0 = 0"),
            (
                "factual=0.4,analytical=0.3",
                "the shares must sum to 1, got factual=0.4 + analytical=0.3 = 0.7",
            ),
            (
                "factual=4,analytical=6",
                "must sum to 1, got factual=4 + analytical=6 = 10",
            ),
            ("factual=0.5,inferential=0.51", "= 1.01"),
            ("factual=1,factual=2", "`factual` must be named once"),
        ] {
            let e = parse_mix(bad).unwrap_err().to_string();
            assert!(e.contains(msg), "{bad}: {e}");
        }
    }
}
