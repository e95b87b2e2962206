//! Media parts: images (PNG, JPEG, GIF, WebP) and documents (PDF) a user
//! message or a tool result carries as bytes, recognized by their magic
//! bytes, never by a file name.
//!
//! The JSON projection of a part is `{"type": "image/png", "data":
//! {"$bytes": "<base64url, no padding>"}}` — the codec's spelling of a CBOR
//! byte string — so the session store writes the bytes as a CBOR byte
//! string (docs/session-format.md) and reads them back through the codec's
//! CBOR → JSON bridge unchanged.

use serde::{Deserialize, Serialize};

/// The most bytes one image may have (5 MiB): a larger one is refused,
/// never scaled down.
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;
/// The most bytes one PDF document may have (10 MiB): base64 makes it 4/3
/// as large, and the HTTP engine sends at most 16 MiB a request.
pub const MAX_DOCUMENT_BYTES: u64 = 10 * 1024 * 1024;

/// The media types smith recognizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MediaType {
    /// `image/png`.
    Png,
    /// `image/jpeg`.
    Jpeg,
    /// `image/gif`.
    Gif,
    /// `image/webp`.
    Webp,
    /// `application/pdf`.
    Pdf,
}

impl MediaType {
    /// Every media type, images first.
    pub const ALL: [MediaType; 5] = [
        MediaType::Png,
        MediaType::Jpeg,
        MediaType::Gif,
        MediaType::Webp,
        MediaType::Pdf,
    ];

    /// The MIME type (`image/png`).
    pub fn mime(self) -> &'static str {
        match self {
            MediaType::Png => "image/png",
            MediaType::Jpeg => "image/jpeg",
            MediaType::Gif => "image/gif",
            MediaType::Webp => "image/webp",
            MediaType::Pdf => "application/pdf",
        }
    }

    /// The type for a MIME type, if smith knows it.
    pub fn from_mime(mime: &str) -> Option<MediaType> {
        MediaType::ALL.into_iter().find(|t| t.mime() == mime)
    }

    /// The short name people read (`PNG`).
    pub fn label(self) -> &'static str {
        match self {
            MediaType::Png => "PNG",
            MediaType::Jpeg => "JPEG",
            MediaType::Gif => "GIF",
            MediaType::Webp => "WebP",
            MediaType::Pdf => "PDF",
        }
    }

    /// Whether this is an image (everything but PDF).
    pub fn is_image(self) -> bool {
        !matches!(self, MediaType::Pdf)
    }

    /// The size cap of one part of this type.
    pub fn max_bytes(self) -> u64 {
        if self.is_image() {
            MAX_IMAGE_BYTES
        } else {
            MAX_DOCUMENT_BYTES
        }
    }

    /// The type `head` (the first bytes of a file, 16 are enough) starts
    /// with, by magic bytes alone.
    pub fn sniff(head: &[u8]) -> Option<MediaType> {
        if head.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(MediaType::Png)
        } else if head.starts_with(&[0xff, 0xd8, 0xff]) {
            Some(MediaType::Jpeg)
        } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
            Some(MediaType::Gif)
        } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
            Some(MediaType::Webp)
        } else if head.starts_with(b"%PDF-") {
            Some(MediaType::Pdf)
        } else {
            None
        }
    }
}

impl Serialize for MediaType {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.mime())
    }
}

impl<'de> Deserialize<'de> for MediaType {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mime = String::deserialize(deserializer)?;
        MediaType::from_mime(&mime).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "media type {mime:?} is not one smith knows; use one of {}",
                MediaType::ALL.map(MediaType::mime).join(", ")
            ))
        })
    }
}

/// One media part: its type and its bytes.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Media {
    /// The media type (from the magic bytes).
    #[serde(rename = "type")]
    pub media_type: MediaType,
    /// The bytes, as they are in the file.
    pub data: MediaBytes,
    /// The name it came from (a path as shown to the user), for summaries;
    /// never sent to a provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl std::fmt::Debug for Media {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.summary())
    }
}

impl Media {
    /// A part of `media_type` holding `data`.
    pub fn new(media_type: MediaType, data: Vec<u8>) -> Self {
        Media {
            media_type,
            data: MediaBytes(data),
            name: None,
        }
    }

    /// This part named `name`.
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.data.0
    }

    /// The pixel size (width, height), when the header states it.
    pub fn dimensions(&self) -> Option<(u32, u32)> {
        dimensions(self.media_type, self.bytes())
    }

    /// The bytes as standard base64 with padding (what vendors take).
    pub fn base64(&self) -> String {
        base64(self.bytes(), STANDARD, true)
    }

    /// The `data:` URL of the part.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type.mime(), self.base64())
    }

    /// The one-line summary people see instead of the bytes:
    /// `[image shot.png · PNG 1280×720 · 412 KiB]`.
    pub fn summary(&self) -> String {
        summary_of(self.media_type, self.name.as_deref(), self.bytes())
    }

    /// An estimate of the tokens the part costs a model: an image about
    /// (width × height) / 750 (the common vendor rule), at least 85 and at
    /// most 1,600 (vendors scale larger images down to about 1.15
    /// megapixels); an image without readable dimensions 1,600; a PDF about
    /// 1,500 per page-sized 50 KiB. Used where sizes are estimated
    /// (compaction), never for billing.
    pub fn estimated_tokens(&self) -> u64 {
        if self.media_type.is_image() {
            match self.dimensions() {
                Some((w, h)) => (u64::from(w) * u64::from(h) / 750).clamp(85, 1600),
                None => 1600,
            }
        } else {
            (self.bytes().len() as u64 / (50 * 1024)).max(1) * 1500
        }
    }
}

/// What the active model takes, and where that knowledge came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MediaSupport {
    /// The model, as `provider/model` (for messages).
    pub model: String,
    /// Whether the model reads images: `None` when its catalog entry does
    /// not say.
    pub images: Option<bool>,
    /// Where `images` came from (`the catalog entry of anthropic/...`).
    pub source: String,
    /// Whether the provider sends PDFs to this model as documents.
    pub pdf: bool,
    /// Whether the provider encodes media at all; without it every media
    /// part is refused.
    pub encoder: bool,
}

impl MediaSupport {
    /// Why `media_type` cannot go to the model, or `None` when it can. The
    /// text names the model and where its capability came from. Image
    /// input the catalog does not state is refused, as the request gate
    /// refuses it: attaching an image the next request could not carry
    /// would stop the conversation.
    pub fn refusal(&self, media_type: MediaType) -> Option<String> {
        let model = if self.model.is_empty() {
            "the active model"
        } else {
            &self.model
        };
        if !self.encoder {
            return Some(format!(
                "no media encoder is set up for {model} (its provider cannot be sent images or documents)"
            ));
        }
        let source = if self.source.is_empty() {
            "its catalog entry"
        } else {
            &self.source
        };
        match (media_type.is_image(), self.images) {
            (true, Some(false)) => Some(format!(
                "{model} does not take image input ({source} says so)"
            )),
            (true, None) => Some(format!(
                "whether {model} takes image input is unknown ({source} does not say)"
            )),
            _ => None,
        }
    }
}

/// The one-line summary of a part of `media_type` named `name` holding
/// `data` (see [`Media::summary`]), for readers that hold the bytes
/// without a [`Media`].
pub fn summary_of(media_type: MediaType, name: Option<&str>, data: &[u8]) -> String {
    let kind = if media_type.is_image() {
        "image"
    } else {
        "document"
    };
    let mut out = format!("[{kind}");
    if let Some(name) = name {
        out.push(' ');
        out.push_str(name);
    }
    out.push_str(" · ");
    out.push_str(media_type.label());
    if let Some((w, h)) = dimensions(media_type, data) {
        out.push_str(&format!(" {w}×{h}"));
    }
    out.push_str(" · ");
    out.push_str(&human_size(data.len() as u64));
    out.push(']');
    out
}

/// A size for people: bytes below 1 KiB, else KiB below 1 MiB, else MiB
/// with one decimal.
pub fn human_size(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{} KiB", bytes.div_ceil(1024))
    } else {
        format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// The bytes of a media part. JSON spells them `{"$bytes": "<base64url, no
/// padding>"}` (the codec's CBOR → JSON spelling of a byte string), which
/// the session store turns into a CBOR byte string.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct MediaBytes(pub Vec<u8>);

impl std::fmt::Debug for MediaBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MediaBytes({} bytes)", self.0.len())
    }
}

/// The key of the JSON object that spells a byte string.
pub const BYTES_KEY: &str = "$bytes";

impl Serialize for MediaBytes {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(BYTES_KEY, &base64(&self.0, URL_SAFE, false))?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for MediaBytes {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = std::collections::BTreeMap::<String, String>::deserialize(deserializer)?;
        let text = match (map.len(), map.get(BYTES_KEY)) {
            (1, Some(text)) => text,
            _ => {
                return Err(serde::de::Error::custom(
                    "media data must be {\"$bytes\": \"<base64url>\"} (a CBOR byte string)",
                ));
            }
        };
        decode_base64(text).map(MediaBytes).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "media data of {} characters is not base64url",
                text.len()
            ))
        })
    }
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn base64(bytes: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        let digits = chunk.len() + 1;
        for i in 0..4 {
            if i < digits {
                out.push(char::from(alphabet[(n >> (18 - 6 * i) & 63) as usize]));
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes base64 in either alphabet, padded or not.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0u32;
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = acc << 6 | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    (bits < 6 && acc == 0).then_some(out)
}

/// The pixel size a header states, for the image types; none for PDF or a
/// header that does not state it.
pub fn dimensions(media_type: MediaType, b: &[u8]) -> Option<(u32, u32)> {
    let be32 = |i: usize| Some(u32::from_be_bytes(b.get(i..i + 4)?.try_into().ok()?));
    let be16 = |i: usize| {
        Some(u32::from(u16::from_be_bytes(
            b.get(i..i + 2)?.try_into().ok()?,
        )))
    };
    let le16 = |i: usize| {
        Some(u32::from(u16::from_le_bytes(
            b.get(i..i + 2)?.try_into().ok()?,
        )))
    };
    let le24 = |i: usize| {
        let s = b.get(i..i + 3)?;
        Some(u32::from(s[0]) | u32::from(s[1]) << 8 | u32::from(s[2]) << 16)
    };
    match media_type {
        MediaType::Png => (b.get(12..16)? == b"IHDR").then_some((be32(16)?, be32(20)?)),
        MediaType::Gif => Some((le16(6)?, le16(8)?)),
        MediaType::Webp => match b.get(12..16)? {
            b"VP8 " => Some((le16(26)? & 0x3fff, le16(28)? & 0x3fff)),
            b"VP8L" => {
                let bits = u32::from_le_bytes(b.get(21..25)?.try_into().ok()?);
                Some(((bits & 0x3fff) + 1, (bits >> 14 & 0x3fff) + 1))
            }
            b"VP8X" => Some((le24(24)? + 1, le24(27)? + 1)),
            _ => None,
        },
        MediaType::Jpeg => {
            // Walk the segments to the first start-of-frame marker.
            let mut i = 2;
            while i + 4 <= b.len() {
                if b[i] != 0xff {
                    return None;
                }
                let marker = b[i + 1];
                if marker == 0xff {
                    i += 1;
                    continue;
                }
                let len = be16(i + 2)? as usize;
                let sof = matches!(marker, 0xc0..=0xcf) && !matches!(marker, 0xc4 | 0xc8 | 0xcc);
                if sof {
                    return Some((be16(i + 7)?, be16(i + 5)?));
                }
                i += 2 + len;
            }
            None
        }
        MediaType::Pdf => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2×3 PNG header (signature and IHDR).
    fn png_head() -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend_from_slice(&2u32.to_be_bytes());
        b.extend_from_slice(&3u32.to_be_bytes());
        b
    }

    #[test]
    fn magic_bytes_decide_the_type() {
        assert_eq!(MediaType::sniff(&png_head()), Some(MediaType::Png));
        assert_eq!(
            MediaType::sniff(&[0xff, 0xd8, 0xff, 0xe0]),
            Some(MediaType::Jpeg)
        );
        assert_eq!(
            MediaType::sniff(b"GIF89a\x01\0\x01\0"),
            Some(MediaType::Gif)
        );
        assert_eq!(
            MediaType::sniff(b"RIFF\0\0\0\0WEBPVP8 "),
            Some(MediaType::Webp)
        );
        assert_eq!(MediaType::sniff(b"%PDF-1.4\n"), Some(MediaType::Pdf));
        assert_eq!(MediaType::sniff(b"PNG is a format\n"), None);
        assert_eq!(MediaType::sniff(b"RIFF\0\0\0\0WAVE"), None);
    }

    #[test]
    fn headers_give_dimensions() {
        assert_eq!(dimensions(MediaType::Png, &png_head()), Some((2, 3)));
        assert_eq!(
            dimensions(MediaType::Gif, b"GIF89a\x05\0\x07\0"),
            Some((5, 7))
        );
        // SOI, an APP0 segment of 4 bytes, then SOF0 with 8 bits, 10 high, 20 wide.
        let jpeg = [
            0xff, 0xd8, 0xff, 0xe0, 0, 4, 0, 0, 0xff, 0xc0, 0, 11, 8, 0, 10, 0, 20, 1,
        ];
        assert_eq!(dimensions(MediaType::Jpeg, &jpeg), Some((20, 10)));
        assert_eq!(dimensions(MediaType::Jpeg, &[0xff, 0xd8, 0x00]), None);
    }

    #[test]
    fn bytes_round_trip_through_json_as_the_codec_spells_them() {
        let media = Media::new(MediaType::Png, vec![0, 1, 2, 0xfb, 0xff]).named("a.png");
        let json = serde_json::to_string(&media).unwrap();
        assert_eq!(
            json,
            r#"{"type":"image/png","data":{"$bytes":"AAEC-_8"},"name":"a.png"}"#
        );
        assert_eq!(serde_json::from_str::<Media>(&json).unwrap(), media);
        assert!(serde_json::from_str::<Media>(r#"{"type":"image/png","data":"AAEC"}"#).is_err());
        assert!(
            serde_json::from_str::<Media>(r#"{"type":"text/plain","data":{"$bytes":""}}"#).is_err()
        );
    }

    #[test]
    fn base64_matches_the_standard_alphabet() {
        let m = |b: &[u8]| Media::new(MediaType::Png, b.to_vec()).base64();
        assert_eq!(m(b""), "");
        assert_eq!(m(b"f"), "Zg==");
        assert_eq!(m(b"fo"), "Zm8=");
        assert_eq!(m(b"foo"), "Zm9v");
        assert_eq!(m(&[0xfb, 0xff]), "+/8=");
        assert_eq!(decode_base64("+/8="), Some(vec![0xfb, 0xff]));
        assert_eq!(decode_base64("Zm9vYg"), Some(b"foob".to_vec()));
        assert_eq!(decode_base64("Z!"), None);
    }

    #[test]
    fn the_summary_is_one_line() {
        let mut data = png_head();
        data.resize(3000, 0);
        let media = Media::new(MediaType::Png, data).named("shot.png");
        assert_eq!(media.summary(), "[image shot.png · PNG 2×3 · 3 KiB]");
        let pdf = Media::new(MediaType::Pdf, b"%PDF-1.4".to_vec());
        assert_eq!(pdf.summary(), "[document · PDF · 8 B]");
    }
}
