//! The scale benchmark's picture: CPU time per namespace event against the number of Mirrors,
//! one line per number of namespaces, as a hand-written SVG (log-scaled M axis).

use super::Cell;
use std::fmt::Write as _;

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLOURS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];

/// The SVG document for `cells`.
pub fn svg(cells: &[Cell]) -> String {
    let mut ns: Vec<usize> = cells.iter().map(|c| c.namespaces).collect();
    ns.sort_unstable();
    ns.dedup();
    let max_m = cells.iter().map(|c| c.mirrors).max().unwrap_or(1).max(10) as f64;
    let max_cpu = cells.iter().map(|c| c.cpu_per_event_us).fold(1.0, f64::max) * 1.15;
    let x = |m: usize| LEFT + (m.max(1) as f64).log10() / max_m.log10() * (WIDTH - LEFT - RIGHT);
    let y = |us: f64| HEIGHT - BOTTOM - us / max_cpu * (HEIGHT - TOP - BOTTOM);
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{LEFT}" y="22" font-size="14">skiff: CPU time per Namespace event (fake API server)</text>
<line x1="{LEFT}" y1="{b}" x2="{r}" y2="{b}" stroke="black"/>
<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{b}" stroke="black"/>
<text x="{mid}" y="{xl}" text-anchor="middle">Mirrors (log scale)</text>
<text x="18" y="{ym}" transform="rotate(-90 18 {ym})" text-anchor="middle">µs per event</text>
"#,
        b = HEIGHT - BOTTOM,
        r = WIDTH - RIGHT,
        mid = (LEFT + WIDTH - RIGHT) / 2.0,
        xl = HEIGHT - 12.0,
        ym = (TOP + HEIGHT - BOTTOM) / 2.0,
    );
    for m in [1, 10, 100, 1_000, 10_000]
        .into_iter()
        .filter(|m| *m as f64 <= max_m)
    {
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{m}</text>"#,
            x(m),
            HEIGHT - BOTTOM + 16.0
        );
    }
    for i in 0..=4 {
        let us = max_cpu * f64::from(i) / 4.0;
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{us:.0}</text><line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#ddd"/>"##,
            LEFT - 6.0,
            y(us) + 4.0,
            y(us),
            WIDTH - RIGHT,
            y(us)
        );
    }
    for (i, n) in ns.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let mut row: Vec<&Cell> = cells.iter().filter(|c| c.namespaces == *n).collect();
        row.sort_by_key(|c| c.mirrors);
        let points: Vec<String> = row
            .iter()
            .map(|c| format!("{:.1},{:.1}", x(c.mirrors), y(c.cpu_per_event_us)))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            points.join(" ")
        );
        for c in &row {
            let _ = writeln!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"/>"#,
                x(c.mirrors),
                y(c.cpu_per_event_us)
            );
        }
        let ly = TOP + 20.0 * i as f64;
        let _ = writeln!(
            out,
            r#"<line x1="{:.1}" y1="{ly}" x2="{:.1}" y2="{ly}" stroke="{colour}" stroke-width="2"/><text x="{:.1}" y="{:.1}">N = {n}</text>"#,
            WIDTH - RIGHT + 10.0,
            WIDTH - RIGHT + 30.0,
            WIDTH - RIGHT + 35.0,
            ly + 4.0
        );
    }
    out.push_str("</svg>\n");
    out
}
