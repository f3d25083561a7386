//! `cargo bench --bench flood`: only the hostile-traffic scenario of `make compare`
//! (`compare/flood.rs`), skiff beside the controller-runtime peer on a real control plane of
//! its own. It prints the table and writes nothing; `make compare` puts the same table in
//! BENCHMARKS.md. `SKIFF_BINARY=path` measures another build of skiff (e.g. an older one);
//! `FLOOD_OPERATORS=skiff` leaves the peer out.
// The compare modules are shared with `make compare`, which uses all of them.
#![allow(dead_code)]

#[path = "../tests/support/mod.rs"]
#[cfg_attr(test, allow(unused_imports))]
mod support;

#[path = "compare/children.rs"]
mod children;
#[path = "compare/flood.rs"]
mod flood;
#[path = "compare/lease_watch.rs"]
mod lease_watch;
#[path = "compare/operator.rs"]
mod operator;
#[path = "compare/world.rs"]
mod world;

use std::process::ExitCode;

use operator::Operator;
use support::control_plane::ControlPlane;

fn main() -> ExitCode {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this without it.
    if !std::env::args().any(|a| a == "--bench") {
        println!("flood: skipped outside `cargo bench` (run `cargo bench --bench flood`)");
        return ExitCode::SUCCESS;
    }
    if let Err(e) = children::kill_on_signal() {
        eprintln!("flood: {e}");
        return ExitCode::FAILURE;
    }
    let only = std::env::var("FLOOD_OPERATORS").unwrap_or_default();
    let chosen = |o: &Operator| only.is_empty() || only.split(',').any(|s| s.trim() == o.slug);
    let cp = ControlPlane::start();
    std::fs::create_dir_all(cp.dir().join("compare")).expect("create the log directory");
    let (skiff, peer) = world::install(&cp);
    let operators = [
        (Operator::skiff(), &skiff),
        (
            Operator::peer("scaffold", "peer: scaffold", "scaffold", false),
            &peer,
        ),
    ];
    let floods: Vec<flood::Flooded> = operators
        .iter()
        .filter(|(o, _)| chosen(o))
        .map(|(o, identity)| flood::run(&cp, o, identity))
        .collect();
    println!("{}", flood::render(&floods));
    ExitCode::SUCCESS
}
