//! The members curve as a hand-written SVG (`benches/fleet.svg`): against the number of
//! members, the hub kube-apiserver's RssAnon, and the time from a hub edit to the copy in the
//! last member, each with its fitted line.

use crate::scale::{Point, fit};
use std::fmt::Write as _;

const PANEL: f64 = 320.0;
const HEIGHT: f64 = 300.0;
const LEFT: f64 = 60.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const GAP: f64 = 80.0;

pub fn write(points: &[Point]) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/fleet.svg");
    match std::fs::write(path, svg(points)) {
        Ok(()) => println!("\nwrote {path}"),
        Err(e) => println!("\ncould not write {path}: {e}"),
    }
}

fn svg(points: &[Point]) -> String {
    let memory: Vec<(f64, f64)> = (points.iter())
        .map(|p| (p.members as f64, p.hub.memory.anon as f64 / 1024.0))
        .collect();
    let latency: Vec<(f64, f64)> = (points.iter())
        .filter_map(|p| {
            Some((
                p.members as f64,
                p.edit.as_ref()?.to_last_copy.as_secs_f64(),
            ))
        })
        .collect();
    let width = LEFT + 2.0 * PANEL + GAP + 20.0;
    let mut out = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{HEIGHT}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
"#
    );
    panel(&mut out, LEFT, "hub kube-apiserver RssAnon (MiB)", &memory);
    let second = LEFT + PANEL + GAP;
    panel(
        &mut out,
        second,
        "hub edit → copy in the last member (s)",
        &latency,
    );
    out.push_str("</svg>\n");
    out
}

/// One chart at `left`: the points, their fitted line, axes with four ticks each.
fn panel(out: &mut String, left: f64, title: &str, points: &[(f64, f64)]) {
    let max_x = points.iter().map(|p| p.0).fold(1.0, f64::max);
    let max_y = points.iter().map(|p| p.1).fold(0.001, f64::max) * 1.15;
    let x = |v: f64| left + v / max_x * (PANEL - 20.0);
    let y = |v: f64| HEIGHT - BOTTOM - v / max_y * (HEIGHT - TOP - BOTTOM);
    let bottom = HEIGHT - BOTTOM;
    let _ = write!(
        out,
        r#"<text x="{left}" y="22" font-size="13">{title}</text>
<line x1="{left}" y1="{bottom}" x2="{r}" y2="{bottom}" stroke="black"/>
<line x1="{left}" y1="{TOP}" x2="{left}" y2="{bottom}" stroke="black"/>
<text x="{mid}" y="{label}" text-anchor="middle">members</text>
"#,
        r = left + PANEL - 20.0,
        mid = left + PANEL / 2.0,
        label = HEIGHT - 12.0,
    );
    for i in 0..=4 {
        let (vx, vy) = (max_x * f64::from(i) / 4.0, max_y * f64::from(i) / 4.0);
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">{vx:.0}</text><text x="{:.1}" y="{:.1}" text-anchor="end">{vy:.1}</text><line x1="{left}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#ddd"/>"##,
            x(vx),
            bottom + 16.0,
            left - 6.0,
            y(vy) + 4.0,
            y(vy),
            left + PANEL - 20.0,
            y(vy),
        );
    }
    if points.len() >= 2 {
        let (a, b) = fit(points);
        let _ = writeln!(
            out,
            r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#999" stroke-dasharray="4 3"/>"##,
            x(0.0),
            y(a),
            x(max_x),
            y(a + b * max_x)
        );
    }
    for (px, py) in points {
        let _ = writeln!(
            out,
            r##"<circle cx="{:.1}" cy="{:.1}" r="4" fill="#1f77b4"/>"##,
            x(*px),
            y(*py)
        );
    }
}
