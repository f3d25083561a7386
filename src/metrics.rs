//! Process-wide counters, gauges and histograms, rendered in the Prometheus text format.
//!
//! Hand-written on purpose (a few dozen series; no need for a metrics framework). Series are
//! created on first use and live for the life of the process. Handles are cheap clones of an
//! `Arc`, so hot paths look a series up once and keep the handle.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Bucket upper bounds in seconds, as client-go's and controller-runtime's latency metrics.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

type Labels = Vec<(String, String)>;

struct Family {
    help: &'static str,
    kind: &'static str,
    series: BTreeMap<Labels, Series>,
}

#[derive(Clone)]
enum Series {
    Value(Arc<AtomicU64>),
    Histogram(Arc<HistogramCells>),
}

struct HistogramCells {
    buckets: &'static [f64],
    counts: Vec<AtomicU64>,
    sum: AtomicU64,
    count: AtomicU64,
}

/// A monotonically increasing count.
#[derive(Clone)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// A value that goes up and down (stored as f64 bits).
#[derive(Clone)]
pub struct Gauge(Arc<AtomicU64>);

impl Gauge {
    pub fn set(&self, v: f64) {
        self.0.store(v.to_bits(), Ordering::Relaxed);
    }
}

/// A distribution of observations in fixed buckets.
#[derive(Clone)]
pub struct Histogram(Arc<HistogramCells>);

impl Histogram {
    pub fn observe(&self, v: f64) {
        let cells = &self.0;
        for (bound, count) in cells.buckets.iter().zip(&cells.counts) {
            if v <= *bound {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
        cells.count.fetch_add(1, Ordering::Relaxed);
        let _ = cells
            .sum
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + v).to_bits())
            });
    }
}

fn registry() -> &'static Mutex<BTreeMap<&'static str, Family>> {
    static REGISTRY: OnceLock<Mutex<BTreeMap<&'static str, Family>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

fn series(
    name: &'static str,
    help: &'static str,
    kind: &'static str,
    labels: &[(&str, &str)],
    make: impl FnOnce() -> Series,
) -> Series {
    let labels: Labels = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let mut families = registry().lock().unwrap_or_else(|e| e.into_inner());
    let family = families.entry(name).or_insert_with(|| Family {
        help,
        kind,
        series: BTreeMap::new(),
    });
    family.series.entry(labels).or_insert_with(make).clone()
}

/// The counter or gauge `name{labels}`, created at zero on first use.
fn value(
    name: &'static str,
    help: &'static str,
    kind: &'static str,
    labels: &[(&str, &str)],
) -> Arc<AtomicU64> {
    match series(name, help, kind, labels, || Series::Value(Arc::default())) {
        Series::Value(v) => v,
        Series::Histogram(_) => panic!("metric {name} registered as a histogram"),
    }
}

/// The counter `name{labels}`, created at zero on first use.
pub fn counter(name: &'static str, help: &'static str, labels: &[(&str, &str)]) -> Counter {
    Counter(value(name, help, "counter", labels))
}

/// Declares the gauge family `name` before any series of it exists, so `/metrics` lists its HELP
/// and TYPE from the start (a labelled family whose labels are not known yet).
pub fn declare_gauge(name: &'static str, help: &'static str) {
    let mut families = registry().lock().unwrap_or_else(|e| e.into_inner());
    families.entry(name).or_insert_with(|| Family {
        help,
        kind: "gauge",
        series: BTreeMap::new(),
    });
}

/// The gauge `name{labels}`, created at zero on first use.
pub fn gauge(name: &'static str, help: &'static str, labels: &[(&str, &str)]) -> Gauge {
    Gauge(value(name, help, "gauge", labels))
}

/// The histogram `name{labels}` with [`LATENCY_BUCKETS`], created empty on first use.
pub fn histogram(name: &'static str, help: &'static str, labels: &[(&str, &str)]) -> Histogram {
    let make = || {
        Series::Histogram(Arc::new(HistogramCells {
            buckets: LATENCY_BUCKETS,
            counts: LATENCY_BUCKETS.iter().map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0f64.to_bits()),
            count: AtomicU64::new(0),
        }))
    };
    match series(name, help, "histogram", labels, make) {
        Series::Histogram(h) => Histogram(h),
        Series::Value(_) => panic!("metric {name} registered as a counter or gauge"),
    }
}

/// Every series in the Prometheus text exposition format (version 0.0.4).
pub fn render() -> String {
    let families = registry().lock().unwrap_or_else(|e| e.into_inner());
    let mut out = String::new();
    for (name, family) in families.iter() {
        let _ = writeln!(out, "# HELP {name} {}", family.help);
        let _ = writeln!(out, "# TYPE {name} {}", family.kind);
        for (labels, series) in &family.series {
            match series {
                Series::Value(bits) => {
                    let raw = bits.load(Ordering::Relaxed);
                    let value = if family.kind == "counter" {
                        raw as f64
                    } else {
                        f64::from_bits(raw)
                    };
                    let _ = writeln!(out, "{name}{} {value}", label_text(labels, None));
                }
                Series::Histogram(h) => render_histogram(&mut out, name, labels, h),
            }
        }
    }
    out
}

fn render_histogram(out: &mut String, name: &str, labels: &Labels, h: &HistogramCells) {
    for (bound, count) in h.buckets.iter().zip(&h.counts) {
        let le = bound.to_string();
        let _ = writeln!(
            out,
            "{name}_bucket{} {}",
            label_text(labels, Some(&le)),
            count.load(Ordering::Relaxed)
        );
    }
    let count = h.count.load(Ordering::Relaxed);
    let _ = writeln!(
        out,
        "{name}_bucket{} {count}",
        label_text(labels, Some("+Inf"))
    );
    let sum = f64::from_bits(h.sum.load(Ordering::Relaxed));
    let _ = writeln!(out, "{name}_sum{} {sum}", label_text(labels, None));
    let _ = writeln!(out, "{name}_count{} {count}", label_text(labels, None));
}

fn label_text(labels: &Labels, le: Option<&str>) -> String {
    let mut parts: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    if let Some(le) = le {
        parts.push(format!("le=\"{le}\""));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(","))
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    // What the tests of every module read a series' value with.
    impl Counter {
        pub(crate) fn get(&self) -> u64 {
            self.0.load(Ordering::Relaxed)
        }
    }

    impl Gauge {
        pub(crate) fn get(&self) -> f64 {
            f64::from_bits(self.0.load(Ordering::Relaxed))
        }
    }

    impl Histogram {
        pub(crate) fn count(&self) -> u64 {
            self.0.count.load(Ordering::Relaxed)
        }
    }

    #[test]
    fn counters_render_with_labels_help_and_type() {
        let c = counter("test_requests_total", "Requests.", &[("code", "200")]);
        c.inc();
        c.inc();
        let text = render();
        assert!(text.contains("# TYPE test_requests_total counter"));
        assert!(text.contains("test_requests_total{code=\"200\"} 2"));
    }

    #[test]
    fn the_same_name_and_labels_share_one_series() {
        counter("test_shared_total", "Shared.", &[("a", "b")]).inc();
        assert_eq!(
            counter("test_shared_total", "Shared.", &[("a", "b")]).get(),
            1
        );
    }

    #[test]
    fn histogram_buckets_are_cumulative() {
        let h = histogram("test_latency_seconds", "Latency.", &[]);
        h.observe(0.003);
        h.observe(0.2);
        let text = render();
        assert!(text.contains("test_latency_seconds_bucket{le=\"0.0025\"} 0"));
        assert!(text.contains("test_latency_seconds_bucket{le=\"0.005\"} 1"));
        assert!(text.contains("test_latency_seconds_bucket{le=\"0.25\"} 2"));
        assert!(text.contains("test_latency_seconds_count 2"));
    }

    #[test]
    fn label_values_are_escaped() {
        gauge("test_escaped", "Escaped.", &[("v", "a\"b")]).set(1.5);
        assert!(render().contains("test_escaped{v=\"a\\\"b\"} 1.5"));
    }
}
