//! Every recorded stream cut at every byte offset ends in an explicit error
//! or a clean outcome, never a panic, with exactly one terminal event; and
//! any split of a stream into chunks decodes like the whole.

use proptest::prelude::*;
use smith_providers::types::{Decoder, ProviderErrorKind, StreamEvent};

use crate::support::{AnyDecoder, Fixture, check_rules, fixtures, run};

/// The text whose arrival makes a stream complete, per folder.
fn end_marker(fixture: &Fixture) -> &'static str {
    match fixture.folder {
        "anthropic" => "\"type\":\"message_stop\"",
        "openai-chat" => "[DONE]",
        "openai-responses" => "\"type\":\"response.completed\"",
        _ => "\"finishReason\"",
    }
}

fn find(hay: &[u8], needle: &str) -> Option<usize> {
    hay.windows(needle.len())
        .rposition(|w| w == needle.as_bytes())
}

#[test]
fn every_cut_ends_in_one_explicit_outcome() {
    for fixture in fixtures() {
        let label = format!("{}/{}", fixture.folder, fixture.name);
        let whole = run(
            &mut AnyDecoder::for_folder(fixture.folder),
            &[&fixture.bytes],
        );
        let whole_terminal = whole.last().cloned().unwrap();
        // A stream that fails (an error event or body) may have no end
        // marker; one that stops cleanly must have one.
        let marker_end = find(&fixture.bytes, end_marker(&fixture))
            .map(|at| at + end_marker(&fixture).len())
            .unwrap_or_else(|| {
                assert!(
                    matches!(whole_terminal, StreamEvent::Error(_)),
                    "{label}: no end marker, yet the stream ends in {whole_terminal:?}"
                );
                usize::MAX
            });
        let mut decoder = AnyDecoder::for_folder(fixture.folder);
        let mut before = Vec::new();
        let mut clean = 0usize;
        for cut in 0..=fixture.bytes.len() {
            if cut > 0 {
                before.extend(decoder.decode(&fixture.bytes[cut - 1..cut]));
            }
            let mut fork = decoder.clone();
            let mut events = before.clone();
            events.extend(fork.finish());
            check_rules(&events).unwrap_or_else(|why| panic!("{label} cut at {cut}: {why}"));
            // Nothing after finish.
            assert!(fork.decode(b"data: {}\n\n").is_empty());
            assert!(fork.finish().is_empty());
            match events.last().unwrap() {
                StreamEvent::Stop { .. } => {
                    clean += 1;
                    assert!(
                        cut >= marker_end,
                        "{label} cut at {cut} (before the end marker at {marker_end}) ended cleanly"
                    );
                    // A stream whose error follows its end marker (an error
                    // after the content) stops cleanly when cut before the
                    // error; any other clean stop is the whole stream's.
                    if matches!(whole_terminal, StreamEvent::Stop { .. }) {
                        assert_eq!(events.last(), Some(&whole_terminal), "{label} cut at {cut}");
                    }
                }
                StreamEvent::Error(error) => {
                    if cut < marker_end && matches!(whole_terminal, StreamEvent::Stop { .. }) {
                        assert_eq!(
                            error.kind,
                            ProviderErrorKind::MalformedStream,
                            "{label} cut at {cut}: {}",
                            error.message
                        );
                    }
                }
                other => panic!("{label} cut at {cut}: last event {other:?}"),
            }
        }
        // Byte-at-a-time feeding equals whole feeding.
        let mut all = before;
        all.extend(decoder.finish());
        assert_eq!(all, whole, "{label}: byte-at-a-time differs from whole");
        if matches!(whole_terminal, StreamEvent::Stop { .. }) {
            assert!(clean >= 1, "{label}: the full stream must end cleanly");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn arbitrary_splits_decode_like_the_whole(
        pick in 0usize..64,
        cuts in proptest::collection::vec(any::<u16>(), 0..24),
    ) {
        let all = fixtures();
        let fixture = &all[pick % all.len()];
        let whole = run(&mut AnyDecoder::for_folder(fixture.folder), &[&fixture.bytes]);
        let len = fixture.bytes.len();
        let mut points: Vec<usize> = cuts.iter().map(|c| usize::from(*c) % (len + 1)).collect();
        points.sort_unstable();
        points.dedup();
        let mut parts: Vec<&[u8]> = Vec::new();
        let mut from = 0;
        for point in points {
            parts.push(&fixture.bytes[from..point]);
            from = point;
        }
        parts.push(&fixture.bytes[from..]);
        let split = run(&mut AnyDecoder::for_folder(fixture.folder), &parts);
        prop_assert_eq!(split, whole, "{}/{}", fixture.folder, fixture.name);
    }
}

const FOLDERS: [&str; 5] = [
    "anthropic",
    "openai-responses",
    "openai-chat",
    "openai-compatible",
    "google",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Untrusted bytes: arbitrary input never panics and always ends in
    /// exactly one terminal event that obeys the host's stream rules.
    #[test]
    fn arbitrary_bytes_end_in_one_outcome(
        folder in 0usize..5,
        bytes in proptest::collection::vec(any::<u8>(), 0..512),
        split in any::<u16>(),
    ) {
        let at = usize::from(split) % (bytes.len() + 1);
        let events = run(&mut AnyDecoder::for_folder(FOLDERS[folder]), &[&bytes[..at], &bytes[at..]]);
        prop_assert!(check_rules(&events).is_ok(), "{:?}", events);
    }

    /// Recorded streams with bytes removed, replaced or duplicated.
    #[test]
    fn damaged_recordings_end_in_one_outcome(
        pick in 0usize..64,
        edits in proptest::collection::vec((any::<u16>(), any::<u8>(), 0u8..3), 1..8),
    ) {
        let all = fixtures();
        let fixture = &all[pick % all.len()];
        let mut bytes = fixture.bytes.clone();
        for (at, byte, op) in edits {
            let at = usize::from(at) % bytes.len().max(1);
            match op {
                0 if !bytes.is_empty() => { bytes.remove(at); }
                1 if !bytes.is_empty() => bytes[at] = byte,
                _ => bytes.insert(at.min(bytes.len()), byte),
            }
        }
        let folder = if fixture.folder == "openai-chat" && pick % 2 == 0 { "openai-compatible" } else { fixture.folder };
        let events = run(&mut AnyDecoder::for_folder(folder), &[&bytes]);
        prop_assert!(check_rules(&events).is_ok(), "{}/{}: {:?}", fixture.folder, fixture.name, events.last());
    }
}
