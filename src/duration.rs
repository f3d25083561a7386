//! Go-syntax durations (`500ms`, `15s`, `1m30s`, `2.5s`, `0`), as kubebuilder operators take them.
//!
//! Flags are documented and copied between operators in Go's `time.ParseDuration` syntax, so
//! skiff accepts exactly that syntax, minus negative values (no skiff flag means anything by one).

use std::time::Duration;

/// Nanoseconds per unit, in Go's spelling.
const UNITS: &[(&str, u128)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60 * 1_000_000_000),
    ("h", 3_600 * 1_000_000_000),
];

/// Parses a Go duration: a sequence of decimal numbers, each with a unit, or a bare `0`. The
/// error says why it did not parse; the caller adds the flag name.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad =
        |why: &str| format!("invalid duration {text:?}: {why} (examples: 500ms, 15s, 1m30s, 1h)");
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.starts_with('-') {
        return Err(bad("negative durations are not allowed"));
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest.is_empty() {
        return Err(bad("empty"));
    }
    let mut total_nanos: u128 = 0;
    while !rest.is_empty() {
        let (nanos, after) = parse_term(rest).map_err(|why| bad(&why))?;
        total_nanos = total_nanos
            .checked_add(nanos)
            .ok_or_else(|| bad("too large"))?;
        rest = after;
    }
    let secs = u64::try_from(total_nanos / 1_000_000_000).map_err(|_| bad("too large"))?;
    Ok(Duration::new(secs, (total_nanos % 1_000_000_000) as u32))
}

/// One `<number><unit>` term; returns its nanoseconds and the remaining text.
fn parse_term(text: &str) -> Result<(u128, &str), String> {
    let number_len = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, after_number) = text.split_at(number_len);
    if number.is_empty() || number == "." || number.matches('.').count() > 1 {
        return Err(format!("expected a number at {text:?}"));
    }
    let unit_len = after_number
        .find(|c: char| c.is_ascii_digit() || c == '.')
        .unwrap_or(after_number.len());
    let (unit, rest) = after_number.split_at(unit_len);
    if unit.is_empty() {
        return Err(format!("missing unit after {number:?}"));
    }
    let per_unit = UNITS
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|(_, nanos)| *nanos)
        .ok_or_else(|| format!("unknown unit {unit:?}"))?;
    Ok((scale(number, per_unit)?, rest))
}

/// `number × per_unit` in exact integer arithmetic (fractions below a nanosecond are dropped).
fn scale(number: &str, per_unit: u128) -> Result<u128, String> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let too_large = || "too large".to_owned();
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| too_large())?
    };
    let mut nanos = whole.checked_mul(per_unit).ok_or_else(too_large)?;
    let mut place = per_unit;
    for digit in fraction.bytes().map(|b| u128::from(b - b'0')) {
        place /= 10;
        if place == 0 {
            break;
        }
        nanos += digit * place;
    }
    Ok(nanos)
}

/// Formats a duration the way Go prints it (`1m30s`, `500ms`, `0s`), for logs and errors.
pub fn format_duration(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    if nanos < 1_000_000_000 {
        return match nanos {
            n if n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
            n if n % 1_000 == 0 => format!("{}µs", n / 1_000),
            n => format!("{n}ns"),
        };
    }
    let total_secs = duration.as_secs();
    let (hours, minutes, secs) = (total_secs / 3600, total_secs / 60 % 60, total_secs % 60);
    let mut out = String::new();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    let subsec = duration.subsec_nanos();
    if subsec == 0 {
        out.push_str(&format!("{secs}s"));
    } else {
        let fraction = format!("{subsec:09}");
        out.push_str(&format!("{secs}.{}s", fraction.trim_end_matches('0')));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::ms;

    #[test]
    fn parses_single_units() {
        assert_eq!(parse_duration("500ms"), Ok(ms(500)));
        assert_eq!(parse_duration("15s"), Ok(ms(15_000)));
        assert_eq!(parse_duration("1h"), Ok(ms(3_600_000)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("250µs"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("7ns"), Ok(Duration::from_nanos(7)));
    }

    #[test]
    fn parses_sequences_and_fractions() {
        assert_eq!(parse_duration("1m30s"), Ok(ms(90_000)));
        assert_eq!(parse_duration("1h2m3s4ms"), Ok(ms(3_723_004)));
        assert_eq!(parse_duration("2.5s"), Ok(ms(2_500)));
        assert_eq!(parse_duration(".5s"), Ok(ms(500)));
        assert_eq!(parse_duration("1.5h"), Ok(ms(5_400_000)));
        assert_eq!(parse_duration("+3s"), Ok(ms(3_000)));
    }

    #[test]
    fn bare_zero_is_zero_but_other_bare_numbers_need_a_unit() {
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        let err = parse_duration("15").unwrap_err().to_string();
        assert!(err.contains("missing unit"), "{err}");
        assert!(err.contains("15s"), "error shows an example: {err}");
    }

    #[test]
    fn rejects_malformed_durations() {
        for bad in [
            "",
            "s",
            "1x",
            "1.2.3s",
            "-5s",
            "1s-",
            "ten seconds",
            "1 s",
            ".",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should be rejected");
        }
        let err = parse_duration("5d").unwrap_err().to_string();
        assert!(err.contains("unknown unit \"d\""), "{err}");
    }

    #[test]
    fn rejects_overflow_instead_of_wrapping() {
        assert!(parse_duration("99999999999999999999999999h").is_err());
        assert!(parse_duration("9999999999999999999h").is_err());
    }

    #[test]
    fn formats_like_go() {
        assert_eq!(format_duration(ms(90_000)), "1m30s");
        assert_eq!(format_duration(ms(500)), "500ms");
        assert_eq!(format_duration(ms(2_500)), "2.5s");
        assert_eq!(format_duration(ms(3_600_000)), "1h0m0s");
        assert_eq!(format_duration(Duration::ZERO), "0s");
        assert_eq!(format_duration(ms(15_000)), "15s");
    }

    #[test]
    fn formatted_durations_parse_back() {
        for d in [ms(1), ms(999), ms(1_001), ms(61_000), ms(7_322_500)] {
            assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        }
    }
}
