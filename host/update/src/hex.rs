//! Lowercase hex, the text form of keys, signatures and digests.

/// `bytes` as lowercase hex.
pub fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// The `N` bytes `text` spells in hex (either case), or `None` when it is
/// not exactly `2 * N` hex digits.
pub fn decode<const N: usize>(text: &str) -> Option<[u8; N]> {
    let text = text.as_bytes();
    if text.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in text.chunks_exact(2).enumerate() {
        let hi = digit(pair[0])?;
        let lo = digit(pair[1])?;
        out[i] = hi << 4 | lo;
    }
    Some(out)
}

fn digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trips_and_rejects_bad_lengths_and_digits() {
        let bytes = [0x00, 0x7f, 0xa5, 0xff];
        assert_eq!(super::encode(&bytes), "007fa5ff");
        assert_eq!(super::decode::<4>("007FA5ff"), Some(bytes));
        assert_eq!(super::decode::<4>("007fa5f"), None);
        assert_eq!(super::decode::<4>("007fa5fg"), None);
    }
}
