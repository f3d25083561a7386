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

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339_seconds(at(0, 0)), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339_micros(at(1_780_515_600, 123_456_789)),
            "2026-06-03T19:40:00.123456Z"
        );
        assert_eq!(
            rfc3339_millis(at(951_782_400, 5_000_000)),
            "2000-02-29T00:00:00.005Z"
        );
    }

    #[test]
    fn instants_before_1970_print_as_the_epoch() {
        let before = UNIX_EPOCH - Duration::from_secs(5);
        assert_eq!(rfc3339_millis(before), "1970-01-01T00:00:00.000Z");
        assert_eq!(unix_seconds(before), 0.0);
    }

    #[test]
    fn leap_years_and_year_ends_roll_over() {
        assert_eq!(
            rfc3339_millis(at(4_107_542_399, 999_000_000)),
            "2100-02-28T23:59:59.999Z"
        );
        assert_eq!(
            rfc3339_seconds(at(4_107_542_400, 0)),
            "2100-03-01T00:00:00Z"
        );
        assert_eq!(
            rfc3339_seconds(at(1_709_164_800, 0)),
            "2024-02-29T00:00:00Z"
        );
        assert_eq!(
            rfc3339_seconds(at(1_735_689_599, 0)),
            "2024-12-31T23:59:59Z"
        );
    }
}
