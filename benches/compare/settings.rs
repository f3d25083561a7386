//! The comparison's scales, from the environment so a smoke run and the full run are one
//! program: `COMPARE_NAMESPACES=20 COMPARE_FANOUT=40 COMPARE_SQUEEZE=20s COMPARE_HANDOVERS=1`.
//! `COMPARE_OPERATORS=skiff,scaffold COMPARE_WRITE=0` runs only those columns (by slug:
//! skiff, scaffold, shared-limiter, dedicated-lease, scaffold-fs, kyverno).
//! `COMPARE_KYVERNO=1` adds Kyverno to the kit part (`testbin/kyverno`). `COMPARE_PARTS=fight
//! COMPARE_WRITE=0` runs only those parts (`table`: footprint, handovers, faults, squeeze;
//! `flood`; `fight`, whose window is `COMPARE_FIGHT=120s`).

use skiff::duration::parse_duration;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Settings {
    /// Namespaces of the footprint and fan-out scenarios (default 1,000).
    pub namespaces: usize,
    /// Namespaces the fan-out under the squeeze reaches (default 2,000).
    pub fanout: usize,
    /// How long the priority level is squeezed: 60 s by default, so a whole run fits in 20
    /// minutes on 2 CPUs (a 3-minute squeeze: `COMPARE_SQUEEZE=3m`, about 24 minutes).
    pub squeeze: Duration,
    /// Handover rounds per operator (default 10).
    pub handovers: usize,
    /// Threads listing ConfigMaps as the operator, filling the squeezed level's seats.
    pub load_threads: usize,
    /// Whether to rewrite BENCHMARKS.md and the SVG (off for a smoke run).
    pub write_report: bool,
    /// The operators to run, by slug (`COMPARE_OPERATORS=skiff,scaffold`); empty for all.
    pub only: Vec<String>,
    /// The parts to run (`COMPARE_PARTS=fight`); empty for all.
    pub parts: Vec<String>,
    /// How long the fighter fights each operator (default 120 s).
    pub fight: Duration,
    /// New namespaces the kit part stamps the kit into (default 1,000).
    pub kit_namespaces: usize,
    /// Whether the kit part has a Kyverno column (`COMPARE_KYVERNO=1`; its binaries take about
    /// 11 minutes to build).
    pub kyverno: bool,
}

/// The parts of a run, for `COMPARE_PARTS`.
const PARTS: [&str; 4] = ["table", "flood", "fight", "kit"];

impl Settings {
    pub fn from_env() -> Result<Settings, String> {
        let full = Settings {
            namespaces: 1_000,
            fanout: 2_000,
            squeeze: Duration::from_secs(60),
            handovers: 10,
            load_threads: 4,
            write_report: true,
            only: Vec::new(),
            parts: Vec::new(),
            fight: Duration::from_secs(120),
            kit_namespaces: 1_000,
            kyverno: false,
        };
        let settings = Settings {
            namespaces: count("COMPARE_NAMESPACES", full.namespaces)?,
            fanout: count("COMPARE_FANOUT", full.fanout)?,
            squeeze: duration("COMPARE_SQUEEZE", full.squeeze)?,
            handovers: count("COMPARE_HANDOVERS", full.handovers)?,
            load_threads: count("COMPARE_LOAD_THREADS", full.load_threads)?,
            write_report: count("COMPARE_WRITE", 1)? == 1,
            only: list("COMPARE_OPERATORS"),
            parts: list("COMPARE_PARTS"),
            fight: duration("COMPARE_FIGHT", full.fight)?,
            kit_namespaces: count("COMPARE_KIT_NAMESPACES", full.kit_namespaces)?,
            kyverno: count("COMPARE_KYVERNO", 0)? == 1,
        };
        if let Some(part) = settings.parts.iter().find(|p| !PARTS.contains(&p.as_str())) {
            return Err(format!(
                "COMPARE_PARTS: no part {part:?}; the parts are {}",
                PARTS.join(", ")
            ));
        }
        let partial =
            !settings.only.is_empty() || !(settings.parts.is_empty() || settings.kit_only());
        if partial && settings.write_report {
            return Err(
                "COMPARE_OPERATORS and COMPARE_PARTS run part of the report; add COMPARE_WRITE=0 \
                 (nothing is rewritten; COMPARE_PARTS=kit alone rewrites the kit's section)"
                    .into(),
            );
        }
        if settings.fanout < settings.namespaces {
            return Err(format!(
                "COMPARE_FANOUT ({}) must be at least COMPARE_NAMESPACES ({})",
                settings.fanout, settings.namespaces
            ));
        }
        Ok(settings)
    }

    /// Whether the run includes `operator` (`COMPARE_OPERATORS`).
    pub fn chosen(&self, operator: &crate::operator::Operator) -> bool {
        self.only.is_empty() || self.only.iter().any(|s| s == operator.slug)
    }

    /// Whether the kit part has its Kyverno column: `COMPARE_KYVERNO=1`, and `kyverno` among
    /// `COMPARE_OPERATORS` if that is set.
    pub fn runs_kyverno(&self) -> bool {
        let chosen = self.only.is_empty() || self.only.iter().any(|s| s == "kyverno");
        self.kyverno && chosen && self.runs("kit")
    }

    /// Whether the run is the kit part alone (`make compare-kit`): it rewrites only its section.
    pub fn kit_only(&self) -> bool {
        self.parts == ["kit"]
    }

    /// Whether the run includes `part` (one of [`PARTS`]).
    pub fn runs(&self, part: &str) -> bool {
        self.parts.is_empty() || self.parts.iter().any(|p| p == part)
    }
}

/// A comma-separated list; empty when unset.
fn list(name: &str) -> Vec<String> {
    std::env::var(name)
        .map(|list| list.split(',').map(|s| s.trim().to_owned()).collect())
        .unwrap_or_default()
}

fn count(name: &str, default: usize) -> Result<usize, String> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(text) => text
            .parse()
            .map_err(|_| format!("{name}={text:?}: expected a whole number, e.g. {default}")),
    }
}

fn duration(name: &str, default: Duration) -> Result<Duration, String> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(text) => parse_duration(&text)
            .map_err(|e| format!("{name}={text:?}: {e}; expected e.g. 3m or 20s")),
    }
}
