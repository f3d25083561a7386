//! The picture of the squeeze, as hand-written SVG: for each operator, the time since its last
//! successful renewal over the squeeze (a sawtooth that drops at each renewal), with the renew
//! deadline and the retry period drawn across. Crossing the renew deadline is losing the Lease.

use std::fmt::Write as _;
use std::time::Duration;

const WIDTH: f64 = 980.0;
const HEIGHT: f64 = 440.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 300.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
/// Gaps above this are drawn at the top edge as a triangle, so one lost Lease does not flatten
/// every other series.
const Y_CAP: f64 = 30.0;
const COLOURS: [&str; 6] = [
    "#1b7837", "#d6604d", "#b2182b", "#2166ac", "#8073ac", "#e08214",
];

/// One operator's series: its label, its summary and its (t, gap) points in seconds.
pub struct Series<'a> {
    pub label: &'a str,
    pub summary: String,
    pub points: &'a [(f64, f64)],
}

pub fn render(
    series: &[Series],
    span: Duration,
    renew_deadline: Duration,
    retry: Duration,
) -> String {
    let x_max = span.as_secs_f64().max(1.0);
    let worst = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let y_max = (renew_deadline.as_secs_f64() + 2.0)
        .max(worst.min(Y_CAP))
        .ceil();
    let plot = Plot { x_max, y_max };
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{LEFT}" y="22" font-size="14" font-weight="bold">Lease renewal gaps under the APF squeeze (observed at the API server)</text>
"#
    );
    plot.axes(&mut svg);
    plot.threshold(
        &mut svg,
        renew_deadline.as_secs_f64(),
        "#b2182b",
        "6 4",
        "renew deadline",
    );
    plot.threshold(
        &mut svg,
        retry.as_secs_f64(),
        "#888888",
        "2 3",
        "retry period",
    );
    // Drawn last to first, so skiff's line (the first) is on top where the lines overlap.
    for (i, s) in series.iter().enumerate().rev() {
        plot.series(&mut svg, s, COLOURS[i % COLOURS.len()]);
    }
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let y = TOP + 20.0 + 38.0 * i as f64;
        let x = WIDTH - RIGHT + 15.0;
        let _ = writeln!(
            svg,
            r##"<rect x="{x}" y="{}" width="12" height="12" fill="{colour}"/><text x="{}" y="{}">{}</text><text x="{}" y="{}" fill="#555">{}</text>"##,
            y - 10.0,
            x + 18.0,
            y,
            escape(s.label),
            x + 18.0,
            y + 15.0,
            escape(&s.summary)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

struct Plot {
    x_max: f64,
    y_max: f64,
}

impl Plot {
    fn x(&self, t: f64) -> f64 {
        LEFT + (WIDTH - LEFT - RIGHT) * (t / self.x_max).clamp(0.0, 1.0)
    }

    fn y(&self, v: f64) -> f64 {
        HEIGHT - BOTTOM - (HEIGHT - TOP - BOTTOM) * (v / self.y_max).clamp(0.0, 1.0)
    }

    fn axes(&self, svg: &mut String) {
        let (x0, x1, y0, y1) = (
            self.x(0.0),
            self.x(self.x_max),
            self.y(0.0),
            self.y(self.y_max),
        );
        let _ = writeln!(
            svg,
            r##"<path d="M{x0} {y1} V{y0} H{x1}" stroke="#333" fill="none"/>"##
        );
        for step in ticks(self.y_max) {
            let y = self.y(step);
            let _ = writeln!(
                svg,
                r##"<line x1="{x0}" x2="{x1}" y1="{y}" y2="{y}" stroke="#eee"/><text x="{}" y="{}" text-anchor="end">{step} s</text>"##,
                x0 - 6.0,
                y + 4.0
            );
        }
        for step in ticks(self.x_max) {
            let x = self.x(step);
            let _ = writeln!(
                svg,
                r#"<text x="{x}" y="{}" text-anchor="middle">{step} s</text>"#,
                y0 + 18.0
            );
        }
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle">time into the squeeze</text>"#,
            (x0 + x1) / 2.0,
            y0 + 38.0
        );
        let _ = writeln!(
            svg,
            r#"<text transform="translate(16 {}) rotate(-90)" text-anchor="middle">time since the previous renewal</text>"#,
            (y0 + y1) / 2.0
        );
    }

    fn threshold(&self, svg: &mut String, value: f64, colour: &str, dash: &str, label: &str) {
        let y = self.y(value);
        let _ = writeln!(
            svg,
            r#"<line x1="{}" x2="{}" y1="{y}" y2="{y}" stroke="{colour}" stroke-dasharray="{dash}"/><text x="{}" y="{}" fill="{colour}" text-anchor="end">{label} {value} s</text>"#,
            self.x(0.0),
            self.x(self.x_max),
            self.x(self.x_max) - 4.0,
            y - 4.0
        );
    }

    /// A sawtooth: the time since the last renewal climbs with the clock and drops to 0 at
    /// each renewal. The first point is the start (no renewal there), the last the end.
    fn series(&self, svg: &mut String, s: &Series, colour: &str) {
        let Some(&(t0, gap0)) = s.points.first() else {
            return;
        };
        let mut path = format!("M{:.1} {:.1}", self.x(t0), self.y(gap0));
        let last = s.points.len() - 1;
        for (i, &(t, gap)) in s.points.iter().enumerate().skip(1) {
            let _ = write!(path, " L{:.1} {:.1}", self.x(t), self.y(gap));
            if i < last {
                let _ = write!(path, " V{:.1}", self.y(0.0));
            }
        }
        let _ = writeln!(
            svg,
            r#"<path d="{path}" fill="none" stroke="{colour}" stroke-width="1.5" opacity="0.85"/>"#
        );
        for &(t, gap) in s.points.iter().filter(|p| p.1 > self.y_max) {
            let (x, y) = (self.x(t), self.y(self.y_max));
            let _ = writeln!(
                svg,
                r#"<path d="M{x} {y} l-5 9 h10 z" fill="{colour}"><title>{gap:.1} s</title></path>"#
            );
        }
    }
}

/// Five or so round tick values from 0 to `max`.
fn ticks(max: f64) -> Vec<f64> {
    let raw = max / 5.0;
    let step = [1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0]
        .into_iter()
        .find(|s| *s >= raw)
        .unwrap_or(raw.ceil());
    (0..)
        .map(|i| i as f64 * step)
        .take_while(|v| *v <= max + 1e-9)
        .collect()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
