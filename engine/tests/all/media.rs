//! `read` of images and PDFs: recognized by magic bytes, attached as media
//! parts where the model takes them, refused with what/why/next otherwise.

use serde_json::json;
use smith_contract::MediaType;
use smith_engine::tools::media::{MediaCell, MediaSupport};
use smith_engine::tools::{ToolContext, ToolResult, ToolSet};

const PNG: &[u8] = include_bytes!("../../../tests/data/media-4x2.png");
const PDF: &[u8] = include_bytes!("../../../tests/data/media-hello.pdf");

struct Env {
    dir: tempfile::TempDir,
    cx: ToolContext,
}

fn env(support: Option<MediaSupport>) -> Env {
    let dir = tempfile::tempdir().expect("test setup");
    let mut cx = ToolContext::new(dir.path()).expect("test setup");
    if let Some(support) = support {
        cx = cx.with_media(MediaCell::new(support));
    }
    Env { dir, cx }
}

fn takes_images() -> MediaSupport {
    MediaSupport {
        model: "anthropic/claude-x".into(),
        images: Some(true),
        source: "the catalog entry of anthropic/claude-x".into(),
        pdf: true,
        encoder: true,
    }
}

impl Env {
    fn put(&self, name: &str, bytes: &[u8]) {
        std::fs::write(self.dir.path().join(name), bytes).expect("test setup");
    }

    fn read(&self, name: &str) -> ToolResult {
        ToolSet::builtin().call("read", &json!({ "path": name }), &self.cx)
    }
}

#[test]
fn a_png_becomes_an_image_part_with_a_line_naming_it() {
    let env = env(Some(takes_images()));
    // Magic bytes decide, not the name: a PNG named .txt is an image.
    env.put("shot.txt", PNG);
    let r = env.read("shot.txt");
    assert!(!r.is_error, "{}", r.content);
    assert_eq!(r.content, "shot.txt: PNG image, 4×2, 74 B, attached.");
    assert_eq!(r.media.len(), 1);
    assert_eq!(r.media[0].media_type, MediaType::Png);
    assert_eq!(r.media[0].bytes(), PNG);
    assert_eq!(r.details["summary"], "[image shot.txt · PNG 4×2 · 74 B]");
    assert_eq!(r.details["width"], 4);
}

#[test]
fn a_png_named_file_holding_text_stays_text() {
    let env = env(Some(takes_images()));
    env.put("fake.png", b"not an image\n");
    let r = env.read("fake.png");
    assert!(!r.is_error, "{}", r.content);
    assert!(r.media.is_empty());
    assert!(r.content.contains("not an image"), "{}", r.content);
}

#[test]
fn a_model_without_image_input_is_refused_naming_it_and_the_source() {
    let env = env(Some(MediaSupport {
        images: Some(false),
        ..takes_images()
    }));
    env.put("shot.png", PNG);
    let r = env.read("shot.png");
    assert!(r.is_error);
    assert!(r.media.is_empty());
    assert!(
        r.content
            .contains("anthropic/claude-x does not take image input")
            && r.content
                .contains("the catalog entry of anthropic/claude-x")
            && r.content.contains("/model"),
        "{}",
        r.content
    );
}

#[test]
fn unknown_image_input_is_refused_with_the_declaration_that_fixes_it() {
    let env = env(Some(MediaSupport {
        images: None,
        ..takes_images()
    }));
    env.put("shot.png", PNG);
    let r = env.read("shot.png");
    assert!(r.is_error);
    assert!(r.media.is_empty());
    assert!(
        r.content
            .contains("whether anthropic/claude-x takes image input is unknown (the catalog entry of anthropic/claude-x does not say)")
            && r.content.contains("declare `input \"text\" \"image\"`")
            && r.content.contains("models.kdl"),
        "{}",
        r.content
    );
}

#[test]
fn without_a_media_encoder_images_are_refused_not_dropped() {
    let env = env(None);
    env.put("shot.png", PNG);
    let r = env.read("shot.png");
    assert!(r.is_error);
    assert!(r.media.is_empty());
    assert!(
        r.content.contains("shot.png is a PNG image (74 B)")
            && r.content.contains("no media encoder"),
        "{}",
        r.content
    );
}

#[test]
fn an_image_over_the_cap_is_refused_naming_size_and_cap() {
    let env = env(Some(takes_images()));
    let mut big = PNG.to_vec();
    big.resize(5 * 1024 * 1024 + 1, 0);
    env.put("big.png", &big);
    let r = env.read("big.png");
    assert!(r.is_error);
    assert!(r.media.is_empty());
    assert!(
        r.content.contains("5242881 bytes")
            && r.content.contains("over the cap of 5.0 MiB per image")
            && r.content.contains("never scaled down"),
        "{}",
        r.content
    );
}

#[test]
fn a_pdf_goes_as_a_document_where_taken_else_the_model_is_told_to_extract_it() {
    let env1 = env(Some(takes_images()));
    env1.put("spec.pdf", PDF);
    let r = env1.read("spec.pdf");
    assert!(!r.is_error, "{}", r.content);
    assert_eq!(r.media[0].media_type, MediaType::Pdf);
    assert_eq!(r.content, "spec.pdf: PDF document, 434 B, attached.");

    let env2 = env(Some(MediaSupport {
        pdf: false,
        ..takes_images()
    }));
    env2.put("spec.pdf", PDF);
    let r = env2.read("spec.pdf");
    assert!(r.is_error);
    assert!(r.media.is_empty());
    assert!(
        r.content
            .contains("the provider does not send PDFs to anthropic/claude-x")
            && r.content.contains("pdftotext spec.pdf -"),
        "{}",
        r.content
    );
}
