//! The logger: one line per record on stderr, as text or JSON, with bearer tokens scrubbed.
//!
//! Hand-written (a few dozen lines) rather than a logging framework. Each line is formatted in
//! full and written with one locked write, so lines from different threads never interleave.
//!
//! Secrets discipline: credentials are never formatted into log messages (the client's config
//! and request types don't print their tokens or keys). As a safety net, [`redact`] runs on every
//! message and replaces whatever follows `Bearer ` with `[redacted]`. Object bodies are never
//! logged (Secret data is a secret too), which is why other crates' debug and trace records
//! (async-h1 dumps whole requests and responses at trace) are dropped: see [`Logger::enabled`].

use std::borrow::Cow;
use std::fmt;
use std::io::Write as _;
use std::str::FromStr;
use std::time::SystemTime;

use log::{LevelFilter, Log, Metadata, Record};

/// The most verbose level logged for other crates: their debug/trace output holds whole
/// requests, headers and bodies.
const DEPENDENCY_MAX_LEVEL: log::Level = log::Level::Info;

/// How each log line is written (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// `2026-11-29T19:40:00.123Z INFO skiff::leader: message key=value`
    Text,
    /// `{"ts":"2026-11-29T19:40:00.123Z","level":"info","target":"skiff::leader","msg":"message"}`
    Json,
}

impl FromStr for LogFormat {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            _ => Err(format!("unknown log format {text:?} (use text or json)")),
        }
    }
}

impl fmt::Display for LogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Text => "text",
            Self::Json => "json",
        })
    }
}

/// Parses `--log-level`: error, warn, info, debug or trace.
pub fn parse_level(text: &str) -> Result<LevelFilter, String> {
    match text {
        "error" => Ok(LevelFilter::Error),
        "warn" => Ok(LevelFilter::Warn),
        "info" => Ok(LevelFilter::Info),
        "debug" => Ok(LevelFilter::Debug),
        "trace" => Ok(LevelFilter::Trace),
        _ => Err(format!(
            "unknown log level {text:?} (use error, warn, info, debug or trace)"
        )),
    }
}

/// The process's logger; install it once with [`init`].
pub struct Logger {
    format: LogFormat,
    level: LevelFilter,
}

/// Installs the logger for the whole process. Fails if a logger is already installed.
pub fn init(format: LogFormat, level: LevelFilter) -> Result<(), log::SetLoggerError> {
    log::set_boxed_logger(Box::new(Logger::new(format, level)))?;
    log::set_max_level(level);
    Ok(())
}

impl Logger {
    pub fn new(format: LogFormat, level: LevelFilter) -> Self {
        Self { format, level }
    }

    /// The full line (with its newline) for `record` logged at `now`.
    pub fn format_line(&self, record: &Record<'_>, now: SystemTime) -> String {
        let ts = crate::time::rfc3339_millis(now);
        let message = record.args().to_string();
        let msg = redact(&message);
        match self.format {
            LogFormat::Text => format!("{ts} {} {}: {msg}\n", record.level(), record.target()),
            LogFormat::Json => format!(
                "{{\"ts\":\"{ts}\",\"level\":\"{}\",\"target\":{},\"msg\":{}}}\n",
                record.level().as_str().to_ascii_lowercase(),
                json_string(record.target()),
                json_string(&msg),
            ),
        }
    }
}

impl Log for Logger {
    /// skiff's own records down to the configured level; other crates' only down to `info`.
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        let ours = metadata.target() == "skiff" || metadata.target().starts_with("skiff::");
        metadata.level() <= self.level && (ours || metadata.level() <= DEPENDENCY_MAX_LEVEL)
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let line = self.format_line(record, SystemTime::now());
        // Nowhere to report a failed write to stderr; dropping the line is the only option.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    fn flush(&self) {
        let _ = std::io::stderr().lock().flush();
    }
}

/// `text` as a JSON string literal, quotes included.
fn json_string(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

/// The safety net of the secrets discipline: `Bearer <token>` becomes `Bearer [redacted]`.
pub fn redact(message: &str) -> Cow<'_, str> {
    const MARKER: &str = "Bearer ";
    if !message.contains(MARKER) {
        return Cow::Borrowed(message);
    }
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(MARKER) {
        let after = &rest[at + MARKER.len()..];
        let token_len = after
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == ',')
            .unwrap_or(after.len());
        out.push_str(&rest[..at + MARKER.len()]);
        if token_len > 0 {
            out.push_str("[redacted]");
        }
        rest = &after[token_len..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use log::Level;
    use std::time::{Duration, UNIX_EPOCH};

    fn at(secs: u64, millis: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(millis)
    }

    fn line(logger: &Logger, level: Level, message: &str) -> String {
        let args = format_args!("{message}");
        let record = Record::builder()
            .level(level)
            .target("skiff::leader")
            .args(args)
            .build();
        logger.format_line(&record, at(1_795_981_200, 123))
    }

    #[test]
    fn text_lines_carry_time_level_target_and_message() {
        let logger = Logger::new(LogFormat::Text, LevelFilter::Info);
        assert_eq!(
            line(&logger, Level::Info, "became leader lease=skiff-leader"),
            "2026-11-29T19:40:00.123Z INFO skiff::leader: became leader lease=skiff-leader\n"
        );
    }

    #[test]
    fn json_lines_escape_quotes_newlines_and_control_characters() {
        let logger = Logger::new(LogFormat::Json, LevelFilter::Info);
        let text = line(&logger, Level::Warn, "say \"hi\"\nback\\slash\u{1}");
        assert!(
            text.ends_with('\n') && text.matches('\n').count() == 1,
            "{text:?}"
        );
        let parsed: serde_json::Value = serde_json::from_str(&text).expect("valid JSON line");
        assert_eq!(parsed["msg"], "say \"hi\"\nback\\slash\u{1}");
        assert_eq!(parsed["level"], "warn");
        assert_eq!(parsed["target"], "skiff::leader");
        assert_eq!(parsed["ts"], "2026-11-29T19:40:00.123Z");
        assert!(
            text.starts_with("{\"ts\":\"2026-11-29T19:40:00.123Z\",\"level\""),
            "{text}"
        );
    }

    #[test]
    fn records_below_the_level_are_filtered() {
        let logger = Logger::new(LogFormat::Text, LevelFilter::Warn);
        let meta = |level| Metadata::builder().level(level).target("skiff").build();
        assert!(logger.enabled(&meta(Level::Error)));
        assert!(logger.enabled(&meta(Level::Warn)));
        assert!(!logger.enabled(&meta(Level::Info)));
        assert!(!logger.enabled(&meta(Level::Debug)));
    }

    #[test]
    fn other_crates_debug_and_trace_records_are_dropped() {
        let logger = Logger::new(LogFormat::Text, LevelFilter::Trace);
        let meta = |level, target| Metadata::builder().level(level).target(target).build();
        assert!(logger.enabled(&meta(Level::Trace, "skiff::kube::client")));
        assert!(logger.enabled(&meta(Level::Info, "async_h1::client")));
        assert!(!logger.enabled(&meta(Level::Trace, "async_h1::client")));
        assert!(!logger.enabled(&meta(Level::Debug, "skiffy")));
    }

    #[test]
    fn bearer_tokens_in_debug_formatted_headers_are_redacted() {
        let header = r#"{"authorization": [HeaderValue { inner: "Bearer tok3n" }]}"#;
        assert_eq!(
            redact(header),
            r#"{"authorization": [HeaderValue { inner: "Bearer [redacted]" }]}"#
        );
    }

    #[test]
    fn bearer_tokens_never_reach_a_line() {
        let logger = Logger::new(LogFormat::Json, LevelFilter::Info);
        let text = line(
            &logger,
            Level::Info,
            "header Authorization: Bearer abc.def-1 sent",
        );
        assert!(!text.contains("abc.def-1"), "{text}");
        assert!(text.contains("Bearer [redacted] sent"), "{text}");
    }

    #[test]
    fn redact_handles_several_tokens_and_leaves_other_text_alone() {
        assert_eq!(redact("no secrets here"), "no secrets here");
        assert_eq!(
            redact("Bearer a, \"Bearer b\" end"),
            "Bearer [redacted], \"Bearer [redacted]\" end"
        );
        assert_eq!(redact("trailing Bearer "), "trailing Bearer ");
    }

    #[test]
    fn formats_and_levels_parse_from_flag_values() {
        assert_eq!("json".parse::<LogFormat>(), Ok(LogFormat::Json));
        assert!("yaml".parse::<LogFormat>().is_err());
        assert_eq!(parse_level("debug"), Ok(LevelFilter::Debug));
        assert!(
            parse_level("verbose")
                .unwrap_err()
                .contains("use error, warn")
        );
    }
}
