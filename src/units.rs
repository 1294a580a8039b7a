//! Units as people type and read them: DURATION and SIZE parsers for the
//! command line, and the words for a span or a size in a sentence.
//!
//! A DURATION is a plain number of seconds (`2.5`, as curl) or a number with a
//! unit `ms`, `s`, `m` or `h` (`500ms`, `3s`, `2m`). The functions return a
//! `String` error so that clap can name the flag in its usage error.

use std::time::Duration;

/// The longest duration anyone can mean on a command line (one year); anything
/// beyond is a typo, and refusing it keeps later arithmetic far from overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(format!("`{text}`: durations cannot be negative"));
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 0.001,
        "m" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{text}` (use ms, s, m or h, e.g. 500ms, 3s, 2m)"
            ));
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (e.g. 2.5, 500ms, 3s, 2m)"))?;
    let secs = value * scale;
    if !secs.is_finite() || secs > MAX_DURATION.as_secs_f64() {
        return Err(format!("`{text}` is longer than one year"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A SIZE in bytes: a plain number or a number with `B`, `KiB`, `MiB`, `GiB`
/// (also `K`, `M`, `G`, and `KB`, `MB`, `GB` meaning the same binary units).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("`{text}` is not a size (e.g. 4096, 64KiB, 2MiB)")),
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("`{text}` is not a size (e.g. 4096, 64KiB, 2MiB)"))
}

/// A size for a sentence: `512 B`, `4.9 KiB`, `12.0 MiB`, `1.50 GiB`.
pub fn size_text(bytes: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    let decimals = if unit == UNITS.len() - 1 { 2 } else { 1 };
    format!("{value:.decimals$} {}", UNITS[unit])
}

/// A duration for a sentence: `4ms`, `3.21s`, `56.8s`, `2m05s`; precise
/// where a human can tell the difference, short everywhere else.
pub fn span(d: Duration) -> String {
    match d.as_secs_f64() {
        s if s < 1.0 => format!("{}ms", d.as_millis()),
        s if s < 10.0 => format!("{s:.2}s"),
        _ => clock(d, 1),
    }
}

/// A ticking time: seconds with `decimals` under a minute, then `2m05s`,
/// then `1h02m`, so that the line does not jump in width every tick.
pub fn clock(d: Duration, decimals: usize) -> String {
    let s = d.as_secs_f64();
    let whole = d.as_secs();
    if s < 60.0 {
        format!("{s:.decimals$}s")
    } else if whole < 3600 {
        format!("{}m{:02}s", whole / 60, whole % 60)
    } else {
        format!("{}h{:02}m", whole / 3600, whole % 3600 / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let ok = [
            ("2.5", 2500),
            ("0", 0),
            ("500ms", 500),
            ("3s", 3000),
            ("2m", 120_000),
            ("1h", 3_600_000),
            (" 1.5s ", 1500),
            ("0.5ms", 0),
        ];
        for (text, ms) in ok {
            assert_eq!(parse_duration(text).unwrap().as_millis(), ms, "{text}");
        }
        for bad in [
            "",
            "s",
            "-1",
            "1d",
            "abc",
            "1.2.3",
            "nan",
            "1e3",
            "9999999h",
            "5 parsecs",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("2MiB"), Ok(2 << 20));
        assert_eq!(parse_size("1k"), Ok(1024));
        assert_eq!(parse_size("100"), Ok(100));
        for bad in ["", "KiB", "-1", "1.5MiB", "1TiB", "99999999999999999999"] {
            assert!(parse_size(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn sizes_for_sentences() {
        assert_eq!(size_text(512), "512 B");
        assert_eq!(size_text(5000), "4.9 KiB");
        assert_eq!(size_text(12 << 20), "12.0 MiB");
        assert_eq!(size_text(3 << 29), "1.50 GiB");
    }
}
