//! Wall-clock timestamps in the formats the Kubernetes API uses (RFC 3339, UTC).
//!
//! Only for what goes on the wire or into logs: every duration skiff *decides* on is measured
//! with the monotonic `Instant`, never with these.

use std::time::{SystemTime, UNIX_EPOCH};

/// `2026-11-29T19:40:00Z` (metav1.Time).
pub fn rfc3339_seconds(t: SystemTime) -> String {
    let (secs, _) = split(t);
    format!("{}Z", date_time(secs))
}

/// `2026-11-29T19:40:00.123456Z` (metav1.MicroTime, as in Lease acquireTime/renewTime).
pub fn rfc3339_micros(t: SystemTime) -> String {
    let (secs, nanos) = split(t);
    format!("{}.{:06}Z", date_time(secs), nanos / 1_000)
}

/// `2026-11-29T19:40:00.123Z`, for log lines.
pub fn rfc3339_millis(t: SystemTime) -> String {
    let (secs, nanos) = split(t);
    format!("{}.{:03}Z", date_time(secs), nanos / 1_000_000)
}

/// The current time as metav1.Time.
pub fn now_seconds() -> String {
    rfc3339_seconds(SystemTime::now())
}

/// The current time as metav1.MicroTime.
pub fn now_micros() -> String {
    rfc3339_micros(SystemTime::now())
}

/// Seconds since the Unix epoch (for timestamp gauges).
pub fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

fn split(t: SystemTime) -> (u64, u32) {
    // A clock before 1970 is a broken clock; print the epoch rather than fail.
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    (d.as_secs(), d.subsec_nanos())
}

fn date_time(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Parses an RFC 3339 timestamp (`2026-11-29T19:40:00Z`, fractions and `+01:00` offsets too),
/// as exec credential plugins write `expirationTimestamp`. `None` when it is not one.
pub fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    let text = text.trim();
    let (date, rest) = text.split_at_checked(10)?;
    let rest = rest.strip_prefix(['T', 't', ' '])?;
    let mut fields = date.split('-');
    let year: i64 = number(fields.next()?, 4)?;
    let month: u32 = number(fields.next()?, 2)?;
    let day: u32 = number(fields.next()?, 2)?;
    let (clock, offset) = split_offset(rest)?;
    let (clock, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let mut parts = clock.split(':');
    let hour: i64 = number(parts.next()?, 2)?;
    let minute: i64 = number(parts.next()?, 2)?;
    let second: i64 = number(parts.next()?, 2)?;
    let valid = (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && hour < 24
        && minute < 60
        && second < 61
        && parts.next().is_none()
        && fraction.bytes().all(|b| b.is_ascii_digit());
    if !valid {
        return None;
    }
    let nanos = format!("{fraction:0<9}").get(..9)?.parse::<u32>().ok()?;
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset;
    let secs = u64::try_from(secs).ok()?;
    Some(UNIX_EPOCH + std::time::Duration::new(secs, nanos))
}

/// `Z` or `±hh:mm` at the end of the time of day: (time of day, offset in seconds).
fn split_offset(rest: &str) -> Option<(&str, i64)> {
    if let Some(clock) = rest.strip_suffix(['Z', 'z']) {
        return Some((clock, 0));
    }
    let at = rest.rfind(['+', '-'])?;
    let (clock, offset) = rest.split_at(at);
    let sign = if offset.starts_with('-') { -1 } else { 1 };
    let (hours, minutes) = offset[1..].split_once(':')?;
    let seconds = number::<i64>(hours, 2)? * 3600 + number::<i64>(minutes, 2)? * 60;
    Some((clock, sign * seconds))
}

fn number<T: std::str::FromStr>(text: &str, digits: usize) -> Option<T> {
    if text.len() != digits || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// (year, month, day) to days since 1970-01-01, Howard Hinnant's `days_from_civil`.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 to (year, month, day), Howard Hinnant's `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64, nanos: u32) -> SystemTime {
        UNIX_EPOCH + Duration::new(secs, nanos)
    }

    /// A formatter, the instant it is given (seconds, nanoseconds), and what it must print.
    type Case = (fn(SystemTime) -> String, u64, u32, &'static str);

    fn assert_formats(cases: &[Case]) {
        for &(format, secs, nanos, want) in cases {
            assert_eq!(format(at(secs, nanos)), want, "{secs}s {nanos}ns");
        }
    }

    #[test]
    fn formats_known_instants() {
        assert_formats(&[
            (rfc3339_seconds, 0, 0, "1970-01-01T00:00:00Z"),
            (
                rfc3339_micros,
                1_780_515_600,
                123_456_789,
                "2026-06-03T19:40:00.123456Z",
            ),
            (
                rfc3339_millis,
                951_782_400,
                5_000_000,
                "2000-02-29T00:00:00.005Z",
            ),
        ]);
    }

    #[test]
    fn instants_before_1970_print_as_the_epoch() {
        let before = UNIX_EPOCH - Duration::from_secs(5);
        assert_eq!(rfc3339_millis(before), "1970-01-01T00:00:00.000Z");
        assert_eq!(unix_seconds(before), 0.0);
    }

    #[test]
    fn leap_years_and_year_ends_roll_over() {
        assert_formats(&[
            (
                rfc3339_millis,
                4_107_542_399,
                999_000_000,
                "2100-02-28T23:59:59.999Z",
            ),
            (rfc3339_seconds, 4_107_542_400, 0, "2100-03-01T00:00:00Z"),
            (rfc3339_seconds, 1_709_164_800, 0, "2024-02-29T00:00:00Z"),
            (rfc3339_seconds, 1_735_689_599, 0, "2024-12-31T23:59:59Z"),
        ]);
    }

    #[test]
    fn parses_what_it_formats_and_offsets_and_fractions() {
        for t in [at(0, 0), at(1_780_515_600, 0), at(4_107_542_400, 0)] {
            assert_eq!(parse_rfc3339(&rfc3339_seconds(t)), Some(t));
        }
        let micros = at(1_780_515_600, 123_456_000);
        assert_eq!(parse_rfc3339(&rfc3339_micros(micros)), Some(micros));
        for offset in ["2026-06-03T21:40:00+02:00", "2026-06-03T19:39:00-00:01"] {
            assert_eq!(
                parse_rfc3339(offset),
                Some(at(1_780_515_600, 0)),
                "{offset}"
            );
        }
        for bad in [
            "",
            "2026-06-03",
            "2026-13-03T00:00:00Z",
            "2026-06-03T19:40Z",
            "soon",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
