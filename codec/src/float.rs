//! IEEE 754 half/single/double conversions used by the canonical float rule.
//!
//! RFC 8949 §4.2.1 requires a float to be written in the shortest of
//! binary16, binary32 and binary64 that keeps its value exactly. The encoder
//! asks [`shortest`] which width that is; the strict decoder asks the same
//! question of a decoded value and rejects any wider encoding.

/// The binary16 bit pattern of the canonical NaN (`f9 7e00`).
pub(crate) const CANONICAL_NAN_F16: u16 = 0x7e00;

/// The shortest exact encoding of an `f64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shortest {
    /// Fits binary16 exactly; these are its bits.
    Half(u16),
    /// Fits binary32 exactly (but not binary16); these are its bits.
    Single(u32),
    /// Needs binary64.
    Double(u64),
}

/// Returns the narrowest width that represents `v` exactly. NaN (any payload)
/// maps to the canonical half NaN `0x7e00`.
#[inline]
pub(crate) fn shortest(v: f64) -> Shortest {
    if v.is_nan() {
        return Shortest::Half(CANONICAL_NAN_F16);
    }
    let s = v as f32;
    if f64::from(s) != v {
        return Shortest::Double(v.to_bits());
    }
    // The value is exact in binary32; `-0.0 == 0.0` compares equal above but
    // the cast keeps the sign, so the bits below are still exact.
    match f32_to_f16_exact(s) {
        Some(h) => Shortest::Half(h),
        None => Shortest::Single(s.to_bits()),
    }
}

/// Converts a (non-NaN) `f32` to binary16 bits if and only if the conversion
/// is exact.
#[inline]
fn f32_to_f16_exact(v: f32) -> Option<u16> {
    let bits = v.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let mant = bits & 0x007f_ffff;
    if exp == 0xff {
        // Infinity (NaN was handled by the caller).
        return Some(sign | 0x7c00);
    }
    if exp == 0 {
        // Zero is exact; binary32 subnormals are far below binary16's range.
        return if mant == 0 { Some(sign) } else { None };
    }
    let e = exp - 127;
    if (-14..=15).contains(&e) {
        // Normal binary16: 10 mantissa bits, so the low 13 must be zero.
        if mant & 0x1fff != 0 {
            return None;
        }
        return Some(sign | (((e + 15) as u16) << 10) | (mant >> 13) as u16);
    }
    if (-24..=-15).contains(&e) {
        // Subnormal binary16: value = m * 2^-24 with m < 1024.
        let full = mant | 0x0080_0000;
        let shift = (-e - 1) as u32; // 14..=23
        if full & ((1u32 << shift) - 1) != 0 {
            return None;
        }
        return Some(sign | (full >> shift) as u16);
    }
    None
}

/// Widens binary16 bits to an `f64` (exact). Built from bits rather than
/// with `powi`, whose precision Rust does not guarantee.
#[inline]
pub(crate) fn f16_to_f64(h: u16) -> f64 {
    let sign = u64::from(h & 0x8000) << 48;
    let exp = u64::from((h >> 10) & 0x1f);
    let mant = u64::from(h & 0x03ff);
    let bits = match exp {
        0 => {
            // Subnormal (or zero): mant * 2^-24, exact in binary64. The
            // product by a power of two is exact.
            let two_pow_minus_24 = f64::from_bits((1023 - 24) << 52);
            return f64::from_bits(sign | (mant as f64 * two_pow_minus_24).to_bits());
        }
        // Infinity or NaN; a NaN keeps its payload bits (still a NaN).
        0x1f => sign | 0x7ff0_0000_0000_0000 | (mant << 42),
        _ => sign | ((exp + 1023 - 15) << 52) | (mant << 42),
    };
    f64::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_half_round_trips_through_f64_and_back() {
        for h in 0u16..=u16::MAX {
            let v = f16_to_f64(h);
            if v.is_nan() {
                assert_eq!(shortest(v), Shortest::Half(CANONICAL_NAN_F16));
                continue;
            }
            assert_eq!(shortest(v), Shortest::Half(h), "half {h:#06x} -> {v}");
        }
    }

    #[test]
    fn half_widening_is_exact_at_the_edges() {
        assert_eq!(f16_to_f64(0x0001), 5.960464477539063e-8);
        assert_eq!(f16_to_f64(0x03ff), 6.097555160522461e-5);
        assert_eq!(f16_to_f64(0x0400), 6.103515625e-5);
        assert_eq!(f16_to_f64(0x7bff), 65504.0);
        assert_eq!(f16_to_f64(0xc400), -4.0);
        assert_eq!(f16_to_f64(0x8000).to_bits(), (-0.0f64).to_bits());
        assert_eq!(f16_to_f64(0x8001), -5.960464477539063e-8);
        assert_eq!(f16_to_f64(0xfc00), f64::NEG_INFINITY);
        assert!(f16_to_f64(0x7e00).is_nan());
    }

    #[test]
    fn widths_are_chosen_by_exactness() {
        assert_eq!(shortest(1.0), Shortest::Half(0x3c00));
        assert_eq!(shortest(-0.0), Shortest::Half(0x8000));
        assert_eq!(shortest(65504.0), Shortest::Half(0x7bff));
        assert_eq!(shortest(65505.0), Shortest::Single(65505.0f32.to_bits()));
        assert_eq!(shortest(100000.0), Shortest::Single(0x47c3_5000));
        assert_eq!(shortest(1.1), Shortest::Double(1.1f64.to_bits()));
        assert_eq!(shortest(5.960464477539063e-8), Shortest::Half(0x0001));
        assert_eq!(shortest(f64::INFINITY), Shortest::Half(0x7c00));
        assert_eq!(shortest(f64::NEG_INFINITY), Shortest::Half(0xfc00));
        assert_eq!(
            shortest(f64::from(f32::MIN_POSITIVE)),
            Shortest::Single(f32::MIN_POSITIVE.to_bits())
        );
        // Half of the smallest half subnormal is not representable in binary16.
        assert_eq!(
            shortest(f64::from_bits((1023 - 25) << 52)),
            Shortest::Single((127 - 25) << 23)
        );
    }
}
