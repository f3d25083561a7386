//! Wall-clock stamps for the Lease: Kubernetes MicroTime, formatted by hand.
//!
//! These stamps are only written for humans and other tools; skiff never judges expiry by them
//! (see [`record`](super::record)), so no time-zone or parsing library is needed.

use std::time::{SystemTime, UNIX_EPOCH};

/// `t` as MicroTime: RFC 3339 in UTC with exactly six fractional digits,
/// e.g. `2026-11-29T19:51:46.123456Z`. Times before 1970 are written as the epoch.
pub fn micro_time(t: SystemTime) -> String {
    let since_epoch = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since_epoch.as_secs();
    let micros = since_epoch.subsec_micros();
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let in_day = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{micros:06}Z",
        in_day / 3600,
        in_day % 3600 / 60,
        in_day % 60
    )
}

/// `t` as seconds since the Unix epoch (for the last-renew gauge).
pub fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

/// Days since 1970-01-01 → (year, month, day), Howard Hinnant's `civil_from_days`.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64, micros: u32) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(u64::from(micros))
    }

    #[test]
    fn epoch_is_formatted_with_six_fraction_digits() {
        assert_eq!(micro_time(UNIX_EPOCH), "1970-01-01T00:00:00.000000Z");
    }

    #[test]
    fn known_instants_match_rfc3339() {
        // 2000-02-29 (a leap day in a century leap year) 12:34:56.000789
        assert_eq!(
            micro_time(at(951_827_696, 789)),
            "2000-02-29T12:34:56.000789Z"
        );
        // 2026-11-29 19:51:46.123456
        assert_eq!(
            micro_time(at(1_795_981_906, 123_456)),
            "2026-11-29T19:51:46.123456Z"
        );
        // 2100-03-01, after a non-leap century February
        assert_eq!(
            micro_time(at(4_107_542_400, 0)),
            "2100-03-01T00:00:00.000000Z"
        );
    }

    #[test]
    fn times_before_the_epoch_are_clamped() {
        let before = UNIX_EPOCH - Duration::from_secs(10);
        assert_eq!(micro_time(before), "1970-01-01T00:00:00.000000Z");
        assert_eq!(unix_seconds(before), 0.0);
    }
}
