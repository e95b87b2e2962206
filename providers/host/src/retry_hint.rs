//! The wait a refused response asks for, read from its headers.
//!
//! In order, the first that applies:
//!
//! 1. `retry-after-ms` (OpenAI): milliseconds;
//! 2. `retry-after` (RFC 9110 §10.2.3): seconds, or an HTTP date;
//! 3. the vendors' reset headers: `x-ratelimit-reset-requests` and
//!    `x-ratelimit-reset-tokens` (OpenAI, Groq: a duration such as `6m0s`,
//!    `7.66s` or `20ms`) and `anthropic-ratelimit-*-reset` (an RFC 3339
//!    time). Of the limits whose `-remaining` header says 0, the latest
//!    reset; when none says so, the earliest reset (the limit that tripped
//!    is not named, and the retry is bounded anyway).
//!
//! A date or time in the past is a wait of 0. Values that do not parse are
//! ignored, as if the header were absent.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The vendors' limit families: the `-remaining` and `-reset` header of
/// each, and how the reset is written.
const FAMILIES: [(&str, &str, Form); 6] = [
    (
        "x-ratelimit-remaining-requests",
        "x-ratelimit-reset-requests",
        Form::Duration,
    ),
    (
        "x-ratelimit-remaining-tokens",
        "x-ratelimit-reset-tokens",
        Form::Duration,
    ),
    (
        "anthropic-ratelimit-requests-remaining",
        "anthropic-ratelimit-requests-reset",
        Form::Rfc3339,
    ),
    (
        "anthropic-ratelimit-tokens-remaining",
        "anthropic-ratelimit-tokens-reset",
        Form::Rfc3339,
    ),
    (
        "anthropic-ratelimit-input-tokens-remaining",
        "anthropic-ratelimit-input-tokens-reset",
        Form::Rfc3339,
    ),
    (
        "anthropic-ratelimit-output-tokens-remaining",
        "anthropic-ratelimit-output-tokens-reset",
        Form::Rfc3339,
    ),
];

#[derive(Clone, Copy)]
enum Form {
    Duration,
    Rfc3339,
}

/// The wait, in milliseconds, that the headers `get` returns ask for, as
/// of `now`; `None` when no header names one.
pub fn retry_after_ms<'h>(get: impl Fn(&str) -> Option<&'h str>, now: SystemTime) -> Option<u64> {
    if let Some(ms) = get("retry-after-ms").and_then(|v| seconds(v.trim(), 1e-3)) {
        return Some(ms);
    }
    if let Some(v) = get("retry-after").map(str::trim) {
        if let Some(ms) = seconds(v, 1.0) {
            return Some(ms);
        }
        if let Some(at) = http_date(v) {
            return Some(until(at, now));
        }
    }
    let mut exhausted: Option<u64> = None;
    let mut earliest: Option<u64> = None;
    for (remaining, reset, form) in FAMILIES {
        let Some(v) = get(reset).map(str::trim) else {
            continue;
        };
        let wait = match form {
            Form::Duration => go_duration_ms(v),
            Form::Rfc3339 => rfc3339(v).map(|at| until(at, now)),
        };
        let Some(wait) = wait else { continue };
        if get(remaining).is_some_and(|r| r.trim() == "0") {
            exhausted = Some(exhausted.map_or(wait, |e| e.max(wait)));
        }
        earliest = Some(earliest.map_or(wait, |e| e.min(wait)));
    }
    exhausted.or(earliest)
}

/// A non-negative decimal number times `unit` seconds, in milliseconds.
fn seconds(v: &str, unit: f64) -> Option<u64> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let n: f64 = v.parse().ok()?;
    let ms = (n * unit * 1000.0).ceil();
    (ms.is_finite() && ms >= 0.0).then(|| ms.min(u64::MAX as f64) as u64)
}

/// Milliseconds from `now` to `at` (seconds since the epoch), 0 when past.
fn until(at: i64, now: SystemTime) -> u64 {
    let now_ms = now
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis();
    let at_ms = i128::from(at) * 1000;
    u64::try_from((at_ms - now_ms as i128).max(0)).unwrap_or(u64::MAX)
}

/// A Go-style duration (`1h2m3.5s`, `6m0s`, `20ms`, `850us`), in
/// milliseconds, rounded up.
fn go_duration_ms(v: &str) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    let mut total = 0.0f64;
    let mut rest = v;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            return None;
        }
        let n: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3_600_000.0,
            "m" => 60_000.0,
            "s" => 1_000.0,
            "ms" => 1.0,
            "us" | "µs" => 1e-3,
            "ns" => 1e-6,
            _ => return None,
        };
        total += n * scale;
        rest = &rest[unit_len..];
    }
    let ms = total.ceil();
    (ms.is_finite() && ms >= 0.0).then(|| ms.min(u64::MAX as f64) as u64)
}

/// Days from 1970-01-01 to the given civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Seconds since the epoch of a date and time of day, checked for range.
fn epoch(y: i64, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> Option<i64> {
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86_400 + i64::from(h * 3600 + mi * 60 + s))
}

/// `HH:MM:SS`.
fn clock(v: &str) -> Option<(u32, u32, u32)> {
    let mut it = v.split(':').map(|p| p.parse::<u32>().ok());
    let (h, m, s) = (it.next()??, it.next()??, it.next()??);
    it.next().is_none().then_some((h, m, s))
}

/// An HTTP date in the preferred IMF-fixdate form
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), as seconds since the epoch.
fn http_date(v: &str) -> Option<i64> {
    let parts: Vec<&str> = v.split_ascii_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let mo = MONTHS.iter().position(|m| m == month)? as u32 + 1;
    let (h, mi, s) = clock(time)?;
    epoch(year.parse().ok()?, mo, day.parse().ok()?, h, mi, s)
}

/// An RFC 3339 time (`2026-12-02T10:00:30Z`, `...30.5+01:00`), as whole
/// seconds since the epoch (a fraction rounds up).
fn rfc3339(v: &str) -> Option<i64> {
    let (date, rest) = v.split_once(['T', 't', ' '])?;
    let mut d = date.split('-');
    let (y, mo, day) = (
        d.next()?.parse::<i64>().ok()?,
        d.next()?.parse::<u32>().ok()?,
        d.next()?.parse::<u32>().ok()?,
    );
    if d.next().is_some() {
        return None;
    }
    let zone_at = rest.find(['Z', 'z', '+', '-'])?;
    let (time, zone) = rest.split_at(zone_at);
    let (time, fraction) = match time.split_once('.') {
        Some((t, f)) => (t, !f.is_empty() && f.bytes().any(|b| b != b'0')),
        None => (time, false),
    };
    let (h, mi, s) = clock(time)?;
    let offset = match zone {
        "Z" | "z" => 0,
        _ => {
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            let (oh, om) = zone[1..].split_once(':')?;
            sign * (oh.parse::<i64>().ok()? * 3600 + om.parse::<i64>().ok()? * 60)
        }
    };
    Some(epoch(y, mo, day, h, mi, s)? - offset + i64::from(fraction))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn hint(headers: &[(&str, &str)], now: SystemTime) -> Option<u64> {
        retry_after_ms(
            |name| {
                headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(name))
                    .map(|(_, v)| *v)
            },
            now,
        )
    }

    #[test]
    fn retry_after_in_seconds_milliseconds_and_dates() {
        let now = at(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(hint(&[("retry-after", "7")], now), Some(7000));
        assert_eq!(hint(&[("retry-after", " 1.5 ")], now), Some(1500));
        assert_eq!(
            hint(&[("retry-after-ms", "250"), ("retry-after", "9")], now),
            Some(250)
        );
        assert_eq!(
            hint(&[("retry-after", "Sun, 06 Nov 1994 08:50:07 GMT")], now),
            Some(30_000)
        );
        assert_eq!(
            hint(&[("retry-after", "Sun, 06 Nov 1994 08:00:00 GMT")], now),
            Some(0),
            "a date in the past is no wait"
        );
        assert_eq!(hint(&[("retry-after", "soon")], now), None);
        assert_eq!(hint(&[("retry-after", "-3")], now), None);
        assert_eq!(hint(&[], now), None);
    }

    #[test]
    fn vendor_reset_headers_prefer_the_exhausted_limit() {
        let now = at(1_764_669_600); // 2025-12-02T10:00:00Z
        // OpenAI and Groq: Go durations; tokens exhausted, requests not.
        let openai = [
            ("x-ratelimit-remaining-requests", "59"),
            ("x-ratelimit-reset-requests", "1s"),
            ("x-ratelimit-remaining-tokens", "0"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ];
        assert_eq!(hint(&openai, now), Some(360_000));
        // Neither says 0: the earliest reset.
        let neither = [
            ("x-ratelimit-reset-requests", "7.66s"),
            ("x-ratelimit-reset-tokens", "1h2m"),
        ];
        assert_eq!(hint(&neither, now), Some(7660));
        assert_eq!(hint(&[("x-ratelimit-reset-tokens", "20ms")], now), Some(20));
        assert_eq!(hint(&[("x-ratelimit-reset-tokens", "850us")], now), Some(1));
        // Anthropic: RFC 3339 times, with offsets and fractions.
        let anthropic = [
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", "2025-12-02T10:00:12Z"),
            ("anthropic-ratelimit-tokens-remaining", "9000"),
            ("anthropic-ratelimit-tokens-reset", "2025-12-02T10:00:01Z"),
        ];
        assert_eq!(hint(&anthropic, now), Some(12_000));
        assert_eq!(
            hint(
                &[(
                    "anthropic-ratelimit-tokens-reset",
                    "2025-12-02T11:00:04.2+01:00"
                )],
                now
            ),
            Some(5000)
        );
        // retry-after wins over every reset header.
        let both = [("retry-after", "2"), ("x-ratelimit-reset-tokens", "6m0s")];
        assert_eq!(hint(&both, now), Some(2000));
        // Garbage is ignored.
        assert_eq!(
            hint(&[("x-ratelimit-reset-tokens", "6 minutes")], now),
            None
        );
        assert_eq!(
            hint(&[("anthropic-ratelimit-tokens-reset", "tomorrow")], now),
            None
        );
    }

    #[test]
    fn civil_dates_agree_with_known_epochs() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(rfc3339("2025-12-02T10:00:00Z"), Some(1_764_669_600));
        assert_eq!(http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
    }
}
