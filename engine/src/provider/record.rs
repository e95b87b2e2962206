//! Request recording (`--mock-record FILE`): any provider, wrapped, writes
//! every request it is asked to encode to a file as JSON Lines before the
//! provider sees it. The scripted provider (a built-in plugin) is wrapped
//! this way, so what it was asked is kept outside the plugin's sandbox.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{Exchange, Provider, ProviderError, ProviderErrorKind, ProviderInfo, Request};
use super::{StreamEvent, scripted::ScriptError};

/// A provider that records each request before passing it on.
pub struct RecordingProvider {
    inner: Box<dyn Provider>,
    path: PathBuf,
    file: File,
    recorded: usize,
}

impl std::fmt::Debug for RecordingProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingProvider")
            .field("path", &self.path)
            .field("recorded", &self.recorded)
            .finish_non_exhaustive()
    }
}

impl RecordingProvider {
    /// Wraps `inner`, creating (or truncating) the record at `path`.
    ///
    /// # Errors
    ///
    /// When the file cannot be created; the error names the path.
    pub fn new(inner: Box<dyn Provider>, path: &Path) -> Result<Self, ScriptError> {
        let file = File::create(path).map_err(|err| ScriptError {
            message: format!(
                "cannot create the mock request record {}: {err}; check the path given to --mock-record",
                path.display()
            ),
        })?;
        Ok(Self {
            inner,
            path: path.to_path_buf(),
            file,
            recorded: 0,
        })
    }

    /// How many requests were recorded.
    pub fn recorded(&self) -> usize {
        self.recorded
    }

    fn record(&mut self, request: &Request) -> Result<(), ProviderError> {
        let result = serde_json::to_vec(request)
            .map_err(|err| err.to_string())
            .and_then(|mut line| {
                line.push(b'\n');
                self.file
                    .write_all(&line)
                    .and_then(|()| self.file.flush())
                    .map_err(|err| err.to_string())
            });
        match result {
            Ok(()) => {
                self.recorded += 1;
                Ok(())
            }
            Err(err) => Err(ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                format!(
                    "could not record request {} to {}: {err}; the request was not sent so the record stays complete",
                    self.recorded + 1,
                    self.path.display()
                ),
            )),
        }
    }
}

impl Provider for RecordingProvider {
    fn describe(&self) -> ProviderInfo {
        self.inner.describe()
    }

    fn encode(&mut self, request: &Request) -> Result<Exchange, ProviderError> {
        self.record(request)?;
        self.inner.encode(request)
    }

    fn decode(&mut self, chunk: &[u8]) -> Vec<StreamEvent> {
        self.inner.decode(chunk)
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        self.inner.finish()
    }

    fn recover(&mut self, error: &mut ProviderError) -> Option<std::time::Duration> {
        self.inner.recover(error)
    }

    fn interrupter(&self) -> Option<super::Interrupt> {
        self.inner.interrupter()
    }

    fn media_support(&mut self, model: &str) -> smith_contract::media::MediaSupport {
        self.inner.media_support(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Message;

    /// Answers its first request with an empty local exchange and refuses
    /// every later one.
    #[derive(Default)]
    struct Once {
        used: bool,
    }

    impl Provider for Once {
        fn describe(&self) -> ProviderInfo {
            ProviderInfo {
                id: "once".into(),
                models: Vec::new(),
            }
        }
        fn encode(&mut self, _: &Request) -> Result<Exchange, ProviderError> {
            if std::mem::replace(&mut self.used, true) {
                return Err(ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    "this provider answers one request",
                ));
            }
            Ok(Exchange::Local { chunks: Vec::new() })
        }
        fn decode(&mut self, _: &[u8]) -> Vec<StreamEvent> {
            Vec::new()
        }
        fn finish(&mut self) -> Vec<StreamEvent> {
            Vec::new()
        }
    }

    fn request(text: &str) -> Request {
        Request {
            model: "mock-1".into(),
            system: None,
            messages: vec![Message::user(text)],
            tools: Vec::new(),
            max_output_tokens: None,
        }
    }

    #[test]
    fn requests_are_recorded_as_json_lines_before_the_provider_sees_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.jsonl");
        let mut provider = RecordingProvider::new(Box::new(Once::default()), &path).unwrap();
        let first = request("hello");
        assert!(provider.encode(&first).is_ok());
        // The provider answers one request: the second fails in the
        // provider, but it was still recorded.
        let second = request("again");
        assert!(provider.encode(&second).is_err());
        assert_eq!(provider.recorded(), 2);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Request> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines, vec![first, second]);
    }

    #[test]
    fn an_uncreatable_record_names_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("rec.jsonl");
        let err = RecordingProvider::new(Box::new(Once::default()), &path).unwrap_err();
        assert!(err.message.contains(&path.display().to_string()), "{err}");
        assert!(err.message.contains("--mock-record"), "{err}");
    }
}
