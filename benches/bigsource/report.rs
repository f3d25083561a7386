//! The bench's tables: one per operator with every figure, then the operators side by side.

use super::footprint::{Footprint, mib};
use super::world::SCENARIOS;
use std::time::Duration;

/// One fan-out's figures.
pub struct Row {
    pub fan_out: Duration,
    pub idle: Footprint,
    /// VmHWM from the trigger to convergence (reset before it with `clear_refs`).
    pub peak: u64,
    /// Read 10 s after convergence.
    pub after: Footprint,
    /// The first scenario's source edited once: the time until every copy holds the edit,
    /// and the peak while they are updated.
    pub edit: Option<(Duration, u64)>,
}

/// An operator's rows, one per scenario; `None` where it does not copy the kind.
pub struct Results {
    pub label: String,
    pub rows: Vec<Option<Row>>,
}

fn four(f: &Footprint) -> String {
    format!(
        "{} / {} / {} / {}",
        mib(f.rss),
        mib(f.anon),
        mib(f.file),
        mib(f.peak)
    )
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

pub fn print_one(results: &Results) {
    println!("\n{}\n", results.label);
    println!(
        "| fan-out | time | idle VmRSS / RssAnon / RssFile / VmHWM | peak VmHWM | 10 s after VmRSS / RssAnon / RssFile / VmHWM |"
    );
    println!("|---|---|---|---|---|");
    for (s, row) in SCENARIOS.iter().zip(&results.rows) {
        let Some(r) = row else {
            println!("| {} | not copied: ConfigMaps only | | | |", s.name);
            continue;
        };
        let (idle, after) = (four(&r.idle), four(&r.after));
        let (time, peak) = (secs(r.fan_out), mib(r.peak));
        println!("| {} | {time} | {idle} | **{peak}** | {after} |", s.name);
        if let Some((time, peak)) = r.edit {
            let (time, peak) = (secs(time), mib(peak));
            println!(
                "| {}, source edited once | {time} | | **{peak}** | |",
                s.name
            );
        }
    }
}

/// Time, peak VmHWM and RssAnon 10 s after, each operator a column group.
pub fn print_side_by_side(all: &[Results]) {
    println!("\nside by side: fan-out time / peak VmHWM (MiB) / RssAnon 10 s after (MiB)\n");
    let heads: Vec<&str> = all.iter().map(|r| r.label.as_str()).collect();
    println!("| fan-out | {} |", heads.join(" | "));
    println!("|---|{}", "---|".repeat(all.len()));
    for (i, s) in SCENARIOS.iter().enumerate() {
        let cells: Vec<String> = all.iter().map(|r| cell(r.rows[i].as_ref())).collect();
        println!("| {} | {} |", s.name, cells.join(" | "));
        if s.edited {
            let edits: Vec<String> = all.iter().map(|r| edit_cell(r.rows[i].as_ref())).collect();
            println!("| {}, edited once | {} |", s.name, edits.join(" | "));
        }
    }
}

fn cell(row: Option<&Row>) -> String {
    row.map_or("—".into(), |r| {
        format!(
            "{} / {} / {}",
            secs(r.fan_out),
            mib(r.peak),
            mib(r.after.anon)
        )
    })
}

fn edit_cell(row: Option<&Row>) -> String {
    match row.and_then(|r| r.edit) {
        Some((time, peak)) => format!("{} / {} / —", secs(time), mib(peak)),
        None => "—".into(),
    }
}
