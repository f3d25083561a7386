//! `make compare`: skiff beside a controller-runtime operator doing the same job (the peer in
//! `testbin/peer/`, three variants), one after the other on one real control plane. Prints
//! side-by-side tables and rewrites the generated section of BENCHMARKS.md and the SVG.
//!
//! Scenarios, per operator: footprint idle and converged, fan-out to every target namespace and
//! the writes of a restart (`compare/lifecycle.rs`); handover rounds (`compare/handover.rs`);
//! the Lease under controller load with APF squeezed (`compare/squeeze.rs`); hostile traffic on
//! the probe and metrics ports (`compare/flood.rs`); another writer fighting the copies
//! (`compare/fight.rs`); the namespace kit into new namespaces (`compare/kit.rs`, its own
//! section, `make compare-kit` alone; Kyverno beside them with `COMPARE_KYVERNO=1`,
//! `compare/kyverno.rs`). Scales come from
//! the environment (`compare/settings.rs`); `cargo test --all-targets` skips this program.

#[path = "../tests/support/mod.rs"]
#[cfg_attr(test, allow(unused_imports))]
mod support;

#[path = "compare/children.rs"]
mod children;
#[path = "compare/far.rs"]
mod far;
#[path = "compare/faults.rs"]
mod faults;
#[path = "compare/faults_report.rs"]
mod faults_report;
#[path = "compare/fight.rs"]
mod fight;
#[path = "compare/flood.rs"]
mod flood;
#[path = "compare/handover.rs"]
mod handover;
#[path = "compare/kit.rs"]
mod kit;
#[path = "compare/kit_count.rs"]
mod kit_count;
#[path = "compare/kit_report.rs"]
mod kit_report;
#[path = "compare/kyverno.rs"]
mod kyverno;
#[path = "compare/kyverno_launch.rs"]
mod kyverno_launch;
#[path = "compare/lease_watch.rs"]
mod lease_watch;
#[path = "compare/lifecycle.rs"]
mod lifecycle;
#[path = "compare/operator.rs"]
mod operator;
#[path = "compare/report.rs"]
mod report;
#[path = "compare/settings.rs"]
mod settings;
#[path = "compare/squeeze.rs"]
mod squeeze;
#[path = "compare/svg.rs"]
mod svg;
#[path = "compare/world.rs"]
mod world;

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

use operator::{Operator, RENEW_DEADLINE, RETRY_PERIOD};
use report::Column;
use settings::Settings;
use support::control_plane::{ControlPlane, bin_dir};

/// The generated picture, relative to the repository root.
const SVG_PATH: &str = "docs/lease-under-load.svg";
const BENCHMARKS: &str = "BENCHMARKS.md";
const COMMAND: &str = "make compare";

fn main() -> ExitCode {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this without it.
    if !std::env::args().any(|a| a == "--bench") {
        println!("compare: skipped outside `cargo bench` (run `make compare`)");
        return ExitCode::SUCCESS;
    }
    let settings = match Settings::from_env() {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("compare: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = binaries_present(&settings).and_then(|()| children::kill_on_signal()) {
        eprintln!("compare: {e}");
        return ExitCode::FAILURE;
    }
    run(&settings);
    ExitCode::SUCCESS
}

fn binaries_present(settings: &Settings) -> Result<(), String> {
    let mut names = vec!["etcd", "kube-apiserver", "kubectl", "skiff-peer"];
    if settings.runs_kyverno() {
        names.extend(kyverno_launch::BINARIES);
    }
    let missing: Vec<String> = names
        .iter()
        .map(|name| bin_dir().join(name))
        .filter(|path| !path.is_file())
        .map(|path| path.display().to_string())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "missing {}; run `make compare`, which builds the control plane and the peer first \
         (and Kyverno with COMPARE_KYVERNO=1: `testbin/kyverno/build.sh`)",
        missing.join(", ")
    ))
}

fn operators() -> Vec<Operator> {
    vec![
        Operator::skiff(),
        Operator::peer("scaffold", "peer: scaffold", "scaffold", false),
        Operator::peer(
            "shared-limiter",
            "peer: shared limiter",
            "shared-limiter",
            false,
        ),
        Operator::peer(
            "dedicated-lease",
            "peer: own lease config",
            "dedicated-lease",
            false,
        ),
    ]
}

fn run(settings: &Settings) {
    let started = Instant::now();
    println!("compare: {settings:?}");
    let cp = ControlPlane::start();
    std::fs::create_dir_all(cp.dir().join("compare")).expect("create the log directory");
    let (skiff_identity, peer_identity) = world::install(&cp);
    let identities = Identities {
        skiff: &skiff_identity,
        peer: &peer_identity,
    };
    let columns = if settings.runs("table") {
        table(&cp, settings, started, &identities)
    } else {
        Vec::new()
    };
    let chosen = |o: &Operator| settings.chosen(o) && (o.is_skiff() || o.slug == "scaffold");
    let floods: Vec<flood::Flooded> = operators()
        .into_iter()
        .filter(|o| settings.runs("flood") && chosen(o))
        .map(|o| {
            progress(
                started,
                &format!("{}: hostile traffic on both ports", o.label),
            );
            flood::run(&cp, &o, identities.of(&o))
        })
        .collect();
    if settings.runs("fight") {
        world::retire_mirrors(&cp);
        fight::create_namespaces(&cp);
    }
    let fights: Vec<fight::Fought> = operators()
        .into_iter()
        .filter(|o| settings.runs("fight") && chosen(o))
        .map(|o| {
            progress(started, &format!("{}: another writer fights", o.label));
            fight::run(&cp, &o, identities.of(&o), settings.fight)
        })
        .collect();
    let kits: Vec<kit::Kitted> = if settings.runs("kit") {
        let mut kits = kit::part(&cp, settings, started, &identities);
        kits.extend(kyverno::part(&cp, settings, started));
        kits
    } else {
        Vec::new()
    };
    progress(started, "done");
    let kit_section = kit_report::render(&kits, settings);
    println!("{kit_section}");
    if settings.kit_only() {
        if settings.write_report {
            write_section(&kit_section, report::KIT_BEGIN, report::KIT_END);
        }
        return;
    }
    let svg = settings.write_report.then(|| write_svg(&columns, settings));
    let ctx = report::Context {
        machine: machine(),
        date: shell("date -u '+%Y-%m-%d %H:%M UTC'"),
        command: command(),
        namespaces: settings.namespaces,
        fanout: settings.fanout,
        squeeze: settings.squeeze,
        handovers: settings.handovers,
        took: started.elapsed(),
        svg_path: svg,
    };
    let table = if columns.is_empty() {
        String::new()
    } else {
        report::render(&columns, &ctx)
    };
    let section = table + &flood::render(&floods) + &fight::render(&fights);
    println!("{section}");
    if settings.write_report {
        write_section(&section, report::BEGIN, report::END);
        if !kits.is_empty() {
            write_section(&kit_section, report::KIT_BEGIN, report::KIT_END);
        }
        println!("compare: wrote {BENCHMARKS} and {SVG_PATH}");
    }
}

/// Rewrites the generated section of BENCHMARKS.md between `begin` and `end`.
fn write_section(section: &str, begin: &str, end: &str) {
    let path = repo().join(BENCHMARKS);
    let document = std::fs::read_to_string(&path).unwrap_or_default();
    let text = report::splice(&document, section, begin, end);
    std::fs::write(&path, text).expect("write BENCHMARKS.md");
    println!("compare: wrote the section {begin} of {BENCHMARKS}");
}

/// Who each operator runs as.
struct Identities<'a> {
    skiff: &'a world::Identity,
    peer: &'a world::Identity,
}

impl Identities<'_> {
    fn of(&self, operator: &Operator) -> &world::Identity {
        if operator.is_skiff() {
            self.skiff
        } else {
            self.peer
        }
    }
}

/// The side-by-side table: footprint, fan-out, restart and handovers, the faults, and the
/// Lease under the squeeze, for each chosen operator.
fn table(
    cp: &ControlPlane,
    settings: &Settings,
    started: Instant,
    identities: &Identities,
) -> Vec<Column> {
    world::create_namespaces(cp, 0..settings.namespaces, true);
    let mut columns = Vec::new();
    for operator in operators().into_iter().filter(|o| settings.chosen(o)) {
        progress(
            started,
            &format!("{}: footprint, fan-out, restart, handovers", operator.label),
        );
        let id = identities.of(&operator);
        let (life, leader, watch) = lifecycle::run(cp, &operator, id, settings.namespaces);
        let handovers = handover::run(cp, &operator, id, leader, &watch, settings.handovers);
        drop(watch);
        columns.push(Column {
            binary_bytes: std::fs::metadata(operator.binary()).ok().map(|m| m.len()),
            operator,
            lifecycle: Some(life),
            handovers: Some(handovers),
            squeezed: None,
            faults: None,
        });
    }
    world::create_namespaces(cp, settings.namespaces..settings.fanout, false);
    faults::create_namespaces(cp);
    for column in &mut columns {
        progress(
            started,
            &format!(
                "{}: dead connections, partition, 10 ms link",
                column.operator.label
            ),
        );
        let id = identities.of(&column.operator);
        world::retire_mirrors(cp);
        column.faults = Some(run_faults(cp, &column.operator, id, settings.fanout));
    }
    world::retire_mirrors(cp);
    let with_flowschema = Operator::peer(
        "scaffold",
        "peer: scaffold + FlowSchema",
        "scaffold-fs",
        true,
    );
    if settings.chosen(&with_flowschema) {
        columns.push(Column {
            operator: with_flowschema,
            lifecycle: None,
            handovers: None,
            squeezed: None,
            binary_bytes: None,
            faults: None,
        });
    }
    for column in &mut columns {
        progress(
            started,
            &format!("{}: the Lease under the squeeze", column.operator.label),
        );
        let id = identities.of(&column.operator);
        let squeezed = squeeze::run(
            cp,
            &column.operator,
            id,
            settings.squeeze,
            settings.load_threads,
        );
        column.squeezed = Some(squeezed);
    }
    columns
}

/// The fault scenarios of one operator (`compare/faults.rs`, `compare/far.rs`).
fn run_faults(
    cp: &ControlPlane,
    operator: &Operator,
    identity: &world::Identity,
    fanout: usize,
) -> faults_report::Faults {
    let standby = world::second_identity(cp, operator);
    // Each scenario's skiff must reconcile its own Mirror only, not finish another's fan-out.
    let dead = faults::dead_connections(cp, operator, identity);
    world::retire_mirrors(cp);
    let partition = faults::partition(cp, operator, identity, &standby);
    world::retire_mirrors(cp);
    let far = far::run(cp, operator, identity, fanout);
    // The last scenario's replica was killed, not stopped: its Lease would hold the next one up.
    world::free_lease(cp, operator);
    faults_report::Faults {
        dead,
        partition,
        far,
    }
}

/// A progress line with the time since the run started, so a run shows where its time goes.
fn progress(started: Instant, what: &str) {
    println!(
        "compare: [{:4.0} s] {what}",
        started.elapsed().as_secs_f64()
    );
}

fn write_svg(columns: &[Column], settings: &Settings) -> String {
    let series: Vec<svg::Series> = columns
        .iter()
        .filter_map(|c| {
            let s = c.squeezed.as_ref()?;
            Some(svg::Series {
                label: c.operator.label,
                summary: format!(
                    "max gap {:.1} s, {} losses, {} restarts",
                    s.max_gap.as_secs_f64(),
                    s.losses,
                    s.restarts
                ),
                points: &s.gaps,
            })
        })
        .collect();
    let text = svg::render(&series, settings.squeeze, RENEW_DEADLINE, RETRY_PERIOD);
    let path = repo().join(SVG_PATH);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("create docs/");
    }
    std::fs::write(&path, text).expect("write the SVG");
    SVG_PATH.to_owned()
}

/// The command that reproduces this run, with the scale variables it was given.
fn command() -> String {
    let mut scales: Vec<String> = std::env::vars()
        .filter(|(name, _)| name.starts_with("COMPARE_"))
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    scales.sort();
    scales.push(COMMAND.to_owned());
    scales.join(" ")
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// CPUs, model and kernel, for the report's header.
fn machine() -> String {
    let model = shell("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2");
    format!(
        "{} CPUs ({}), Linux {}",
        shell("nproc"),
        model.trim(),
        shell("uname -r")
    )
}

fn shell(script: &str) -> String {
    Command::new("sh")
        .args(["-c", script])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}
