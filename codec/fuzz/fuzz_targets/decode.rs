//! Fuzz the decoder with arbitrary bytes in both modes.
//!
//! Beyond "never panics", every run checks the decoder's promises:
//! * `validate`, `Decoder::skip` and `Value::decode` agree on what is valid;
//! * whatever strict mode accepts is a fixed point of decode -> encode;
//! * whatever lenient mode accepts re-encodes (unless it holds repeated keys
//!   or a bignum tag around a non-byte-string) to bytes strict mode accepts;
//! * depth and item counts never pass the limits, token by token;
//! * the JSON bridge never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use smith_codec::{Decoder, EncodeError, Limits, Mode, Value, json, validate};

fuzz_target!(|data: &[u8]| {
    for mode in [Mode::Strict, Mode::Lenient] {
        let valid = validate(data, mode, Limits::default()).is_ok();
        let value = Value::decode(data, mode, Limits::default());
        assert_eq!(valid, value.is_ok(), "validate and Value::decode disagree");

        let mut d = Decoder::new(data, mode, Limits::default());
        match d.skip() {
            Ok(item) => {
                if valid {
                    assert_eq!(item, data);
                } else {
                    assert!(
                        !d.is_at_end(),
                        "skip accepted everything but validate did not"
                    );
                }
            }
            Err(_) => assert!(!valid),
        }

        if let Ok(v) = value {
            match v.to_cbor() {
                Ok(canon) => {
                    assert!(validate(&canon, Mode::Strict, Limits::default()).is_ok());
                    if mode == Mode::Strict {
                        assert_eq!(canon, data, "strict accepted a non-fixed-point");
                    }
                }
                Err(e) => {
                    assert_eq!(
                        mode,
                        Mode::Lenient,
                        "strict-valid input failed to encode: {e}"
                    );
                    assert!(matches!(
                        e,
                        EncodeError::DuplicateKey { .. } | EncodeError::NonCanonicalBignum { .. }
                    ));
                }
            }
        }

        let small = Limits {
            max_depth: 4,
            max_items: 32,
        };
        let mut d = Decoder::new(data, mode, small);
        while d.next().is_ok() {
            assert!(d.depth() <= small.max_depth);
            assert!(d.items_read() <= small.max_items);
            if d.is_at_end() {
                break;
            }
        }

        let mut s = String::new();
        let _ = json::from_cbor_with(data, mode, Limits::default(), &mut s);
    }
});
