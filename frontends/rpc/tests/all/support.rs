//! An in-memory output for servers under test.

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// Collects what a server writes.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// Every record written, checking each is one LF-terminated JSON line.
    pub fn records(&self) -> Vec<Value> {
        let bytes = self.0.lock().unwrap().clone();
        assert!(
            bytes.is_empty() || bytes.ends_with(b"\n"),
            "the last record ends with LF"
        );
        bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| {
                serde_json::from_slice(l).unwrap_or_else(|e| {
                    panic!("not a JSON record ({e}): {}", String::from_utf8_lossy(l))
                })
            })
            .collect()
    }

    /// The response with `id`.
    pub fn response(&self, id: &Value) -> Value {
        self.records()
            .into_iter()
            .find(|r| r.get("method").is_none() && &r["id"] == id)
            .unwrap_or_else(|| panic!("no response for id {id}: {:?}", self.records()))
    }
}

/// Input that ends only once the server has answered every id in `wait_for`
/// (so calls still running at the end of the records are not cancelled by
/// the end of input), or after 30 seconds.
pub struct GatedInput {
    data: std::io::Cursor<Vec<u8>>,
    out: Captured,
    wait_for: Vec<Value>,
}

impl GatedInput {
    /// `records` first, then the end of input once `wait_for` are answered.
    pub fn new(
        records: String,
        out: Captured,
        wait_for: Vec<Value>,
    ) -> std::io::BufReader<GatedInput> {
        std::io::BufReader::new(GatedInput {
            data: std::io::Cursor::new(records.into_bytes()),
            out,
            wait_for,
        })
    }
}

impl std::io::Read for GatedInput {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.data.read(buf)?;
        if n > 0 {
            return Ok(n);
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            let answered = self.out.records();
            if self.wait_for.iter().all(|id| {
                answered
                    .iter()
                    .any(|r| r.get("method").is_none() && &r["id"] == id)
            }) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Ok(0)
    }
}
