//! The redaction workload, shared by the divan bench and `smith bench`:
//! tool output of a few megabytes (source code, logs, JSON) with no or
//! rare secrets, and a registry of realistic tokens.

use crate::{FingerprintKey, Registry, Source};

/// Deterministic pseudo-random numbers (xorshift64*), so every run
/// measures the same bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Token shapes in common use: a vendor prefix and a body alphabet.
const SHAPES: &[(&str, &str)] = &[
    ("sk-ant-api03-", "base64url"),
    ("sk-proj-", "base64url"),
    ("sk-", "alnum"),
    ("ghp_", "alnum"),
    ("github_pat_", "alnum"),
    ("glpat-", "base64url"),
    ("xoxb-", "digits-dash"),
    ("AKIA", "upper"),
    ("AIza", "base64url"),
    ("npm_", "alnum"),
    ("hf_", "alnum"),
    ("", "hex"),
    ("eyJ", "base64url"),
];

/// `count` distinct realistic tokens of 20 to 60 bytes.
pub fn tokens(count: usize) -> Vec<String> {
    let mut rng = Rng(0x5eed_0f5e_c2e7);
    let mut out: Vec<String> = Vec::with_capacity(count);
    while out.len() < count {
        let (prefix, alphabet) = SHAPES[out.len() % SHAPES.len()];
        let len = 20 + rng.below(41);
        let chars: &[u8] = match alphabet {
            "base64url" => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
            "alnum" => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            "digits-dash" => b"0123456789-",
            "upper" => b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
            _ => b"0123456789abcdef",
        };
        let mut token = prefix.to_owned();
        while token.len() < len {
            token.push(char::from(chars[rng.below(chars.len())]));
        }
        if !out.contains(&token) {
            out.push(token);
        }
    }
    out
}

/// A registry holding [`tokens`]`(count)`, named `bench.N`.
pub fn registry(count: usize) -> Registry {
    let mut registry = Registry::new(FingerprintKey::from_bytes([42; 32]));
    for (i, token) in tokens(count).iter().enumerate() {
        // The generated tokens are 20-60 bytes of name-safe characters:
        // registration cannot be refused.
        let _ = registry.register(&format!("bench.{i}"), token, Source::User);
    }
    registry
}

/// About `bytes` of tool output: Rust source, build and test logs, JSON
/// lines, `env`-style listings and hex dumps. With `plant` set, one of
/// `secrets` appears roughly every 64 KiB; otherwise none does.
pub fn tool_output(bytes: usize, secrets: &[String], plant: bool) -> String {
    const LINES: &[&str] = &[
        "    let mut registry = Registry::new(FingerprintKey::from_bytes([7; 32]));\n",
        "   Compiling smith-secrets v0.1.0 (/work/engine/secrets)\n",
        "test redact::tests::escaped_forms_match_serde_json ... ok\n",
        "{\"level\":\"info\",\"ts\":\"2026-12-01T14:57:02Z\",\"msg\":\"request finished\",\"status\":200,\"bytes\":18234}\n",
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n",
        "HOME=/home/user\nSHELL=/bin/bash\nLANG=C.UTF-8\n",
        "00000040  7f 45 4c 46 02 01 01 00  00 00 00 00 00 00 00 00  |.ELF............|\n",
        "error[E0308]: mismatched types --> src/redact.rs:42:17 expected `usize`, found `u32`\n",
        "        assert_eq!(out, \"GITHUB_TOKEN={secret:github.token}\\n\");\n",
        "diff --git a/engine/secrets/src/lib.rs b/engine/secrets/src/lib.rs\n",
        "Überprüfung abgeschlossen: 17 Dateien, 0 Fehler — ok ✓\n",
    ];
    let mut rng = Rng(0xdead_beef_cafe);
    let mut out = String::with_capacity(bytes + 128);
    let mut next_plant = 64 << 10;
    while out.len() < bytes {
        out.push_str(LINES[rng.below(LINES.len())]);
        if plant && out.len() >= next_plant && !secrets.is_empty() {
            out.push_str("API_KEY=");
            out.push_str(&secrets[rng.below(secrets.len())]);
            out.push('\n');
            next_plant += 64 << 10;
        }
    }
    out
}

/// The benchmark's unit of work: redact `text`, returning its length
/// after redaction (so the work cannot be optimized away).
pub fn redact_once(redactor: &crate::Redactor, text: &str) -> usize {
    redactor.redact_str(text).len()
}
