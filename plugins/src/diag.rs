//! Plugin errors as [`smith_diag::Diagnostic`]s.
//!
//! A [`PluginError`]'s message is written as "what happened; next action".
//! The conversion keeps the plugin and the phase in front of that account
//! (`plugin acme/loop (call encode): ...`, as the error displays), takes the
//! action after the message's last `"; "` as *next* (the kind supplies one
//! when the message has none), adds *why* from the kind, and names the
//! offending value: the message's first quoted value, or else the plugin
//! itself (its name, or the path it was installed from when no name is
//! known yet). The surface is the plugin when it has a valid `org/name`,
//! the plugin's folder or manifest file for install and manifest errors
//! named by path, and the plugin runtime for host-wide failures.
//!
//! Messages a plugin returned (kind [`ErrorKind::Guest`]) are shown as the
//! plugin wrote them; every rendering of a diagnostic redacts registered
//! secrets.

use smith_diag::{Diagnose, Diagnostic, Surface};

use crate::error::{ErrorKind, Phase, PluginError};

/// The name the host uses for failures that belong to no single plugin.
const RUNTIME: &str = "(runtime)";

impl ErrorKind {
    /// The stable kebab-case name of the kind, as used in diagnostic codes
    /// (`plugin.<name>`).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Invalid => "invalid",
            ErrorKind::Io => "io",
            ErrorKind::Component => "component",
            ErrorKind::Deadline => "deadline",
            ErrorKind::AbortGrace => "abort-grace",
            ErrorKind::Memory => "memory",
            ErrorKind::Trap => "trap",
            ErrorKind::Flood => "flood",
            ErrorKind::Destroyed => "destroyed",
            ErrorKind::Guest => "guest",
            ErrorKind::Unsupported => "unsupported",
        }
    }

    /// Why an error of this kind stops the operation.
    fn why(self) -> &'static str {
        match self {
            ErrorKind::Invalid => {
                "a plugin's manifest and files must follow the plugin.kdl rules (docs/plugins.md) before smith installs or loads it"
            }
            ErrorKind::Io => {
                "the operating system refused or failed a file operation on the plugin's files"
            }
            ErrorKind::Component => {
                "a plugin must be a WebAssembly component that compiles on this host and implements its declared world of smith:plugin@1"
            }
            ErrorKind::Deadline => {
                "every plugin call has a hard deadline, so a plugin that does not return cannot stall the agent"
            }
            ErrorKind::AbortGrace => {
                "after an abort the host waits only a short grace period, then destroys the instance and leaves the recorded evidence to speak for its effects"
            }
            ErrorKind::Memory => {
                "each plugin's linear memory is capped by the memory limit of its manifest"
            }
            ErrorKind::Trap => {
                "the state of an instance that trapped cannot be trusted, so the host destroyed it"
            }
            ErrorKind::Flood => {
                "what a plugin sends past its caps per run is dropped, and a call that goes on sending as much again is stopped, so that a flooding plugin cannot slow the run"
            }
            ErrorKind::Destroyed => {
                "the instance was destroyed by an earlier failure and serves no more calls"
            }
            ErrorKind::Guest => "the plugin itself reported the failure",
            ErrorKind::Unsupported => {
                "the plugin needs an API generation or a capability that this smith or the user's grant does not provide"
            }
        }
    }

    /// The next action when the message itself does not give one.
    fn next(self) -> &'static str {
        match self {
            ErrorKind::Invalid => {
                "correct the plugin's files as described above, then install it again"
            }
            ErrorKind::Io => {
                "check that the path exists and is readable, and that smith's data and cache directories are writable"
            }
            ErrorKind::Component => {
                "rebuild the plugin for wasm32-wasip2 against smith:plugin@1 (docs/plugins.md walks through it)"
            }
            ErrorKind::Deadline => {
                "report it to the plugin's author, or raise its deadline if the work is legitimately long"
            }
            ErrorKind::AbortGrace => {
                "report it to the plugin's author: a plugin should poll `cancelled` during long work"
            }
            ErrorKind::Memory => {
                "raise `memory-limit-mib` in the plugin's plugin.kdl if it needs more, or report it to its author"
            }
            ErrorKind::Flood => {
                "report it to the plugin's author; if it is legitimately that chatty, raise its cap (`smith config set plugins.max-log-lines N`), or turn it off with `smith plugin disable NAME`"
            }
            ErrorKind::Trap | ErrorKind::Destroyed => {
                "run `smith plugin reload NAME` to start a fresh instance, and report the failure to the plugin's author"
            }
            ErrorKind::Guest => {
                "correct the input the plugin names, or report the failure to the plugin's author"
            }
            ErrorKind::Unsupported => {
                "update smith, or grant the capability the plugin asks for in its configuration"
            }
        }
    }
}

/// What to do about `plugin` running out of memory. A user or project
/// plugin's limit is `memory-limit-mib` in its manifest; a built-in's is not
/// a setting (its manifest is part of smith, and its limit is sized for the
/// largest input smith hands it), so the input was too large for it.
pub(crate) fn memory_advice(plugin: &str) -> &'static str {
    if crate::builtin::BUILTINS.iter().any(|b| b.name == plugin) {
        "its input was too large for it (a built-in's limit is not a setting); for a provider request, shorten the conversation (run /compact, or start a new session), and report it if a request of ordinary size fails"
    } else {
        "raise `memory-limit-mib` in the plugin's plugin.kdl if it needs more, or report it to its author"
    }
}

impl Diagnose for PluginError {
    /// This error as a diagnostic (`plugin.<kind>`): the plugin, the phase
    /// and the message's account of what happened, why from the kind, the
    /// next action, the offending value and where it came from.
    fn to_diagnostic(&self) -> Diagnostic {
        // Manifest messages start with the manifest's path, which is also
        // the plugin's name here: say it once.
        let message = self
            .message
            .strip_prefix(self.plugin.as_str())
            .and_then(|rest| rest.strip_prefix(": "))
            .unwrap_or(&self.message);
        let next = if self.kind == ErrorKind::Memory {
            memory_advice(&self.plugin)
        } else {
            self.kind.next()
        };
        let d = Diagnostic::from_message(
            format!("plugin.{}", self.kind.name()),
            &format!("plugin {} ({}): {message}", self.plugin, self.phase),
            self.kind.why(),
            next,
        );
        // `from_message` takes the first quoted value of the whole text; the
        // plugin and phase in front carry no quotes, so that is the
        // message's. Without one, the plugin itself is the offending value.
        let d = if d.value().is_some() {
            d
        } else {
            d.with_value(format!("{:?}", self.plugin))
        };
        d.with_surface(self.surface())
    }
}

impl PluginError {
    /// This error as a diagnostic: [`Diagnose::to_diagnostic`], callable
    /// without the trait in scope.
    pub fn to_diagnostic(&self) -> Diagnostic {
        <Self as Diagnose>::to_diagnostic(self)
    }

    /// Where the offending value came from.
    fn surface(&self) -> Surface {
        if crate::manifest::valid_name(&self.plugin) {
            Surface::plugin(&self.plugin)
        } else if self.plugin == RUNTIME {
            Surface::other("the plugin runtime")
        } else if matches!(self.phase, Phase::Install | Phase::Manifest) {
            // Before a manifest is read the plugin is known by its path.
            Surface::file(&self.plugin)
        } else {
            Surface::other(format!("the plugin {}", self.plugin))
        }
    }
}

impl From<&PluginError> for Diagnostic {
    fn from(err: &PluginError) -> Diagnostic {
        err.to_diagnostic()
    }
}

impl From<PluginError> for Diagnostic {
    fn from(err: PluginError) -> Diagnostic {
        err.to_diagnostic()
    }
}

/// This crate's error types that have a diagnostic, to find one behind a
/// `dyn std::error::Error` with a [`smith_diag::Registry`].
pub const DIAGNOSABLE: &[smith_diag::Finder] = &[smith_diag::finder::<PluginError>];

#[cfg(test)]
mod tests {
    use super::*;
    use smith_diag::Value;

    const KINDS: [ErrorKind; 11] = [
        ErrorKind::Invalid,
        ErrorKind::Io,
        ErrorKind::Component,
        ErrorKind::Deadline,
        ErrorKind::AbortGrace,
        ErrorKind::Memory,
        ErrorKind::Trap,
        ErrorKind::Flood,
        ErrorKind::Destroyed,
        ErrorKind::Guest,
        ErrorKind::Unsupported,
    ];

    fn shown(d: &Diagnostic) -> String {
        match d.value() {
            Some(Value::Shown(v)) => v.clone(),
            other => panic!("no offending value in {d}: {other:?}"),
        }
    }

    #[test]
    fn every_kind_converts_with_all_parts_the_plugin_and_the_phase() {
        let mut codes = std::collections::BTreeSet::new();
        for kind in KINDS {
            let err = PluginError::new(
                "acme/tool",
                Phase::Call("encode"),
                kind,
                "setting \"depth\" is troubled; do the thing",
            );
            let d = Diagnostic::from(&err);
            assert!(d.is_complete(), "{d}");
            assert_eq!(d.code(), format!("plugin.{}", kind.name()));
            assert_eq!(
                d.what(),
                "plugin acme/tool (call encode): setting \"depth\" is troubled"
            );
            assert_eq!(d.why(), kind.why());
            assert_eq!(d.next(), "do the thing");
            assert_eq!(shown(&d), "\"depth\"");
            assert_eq!(d.surface(), Some(&Surface::plugin("acme/tool")));
            codes.insert(d.code().to_owned());

            // Without a "; next" the kind supplies the action, and without a
            // quoted value the plugin is the offending value.
            let bare = PluginError::new("acme/tool", Phase::Instantiate, kind, "it broke");
            let d = bare.to_diagnostic();
            assert!(d.is_complete(), "{d}");
            assert_eq!(d.what(), "plugin acme/tool (instantiate): it broke");
            assert_eq!(d.next(), kind.next());
            assert_eq!(shown(&d), "\"acme/tool\"");
        }
        assert_eq!(codes.len(), KINDS.len());
    }

    #[test]
    fn the_surface_follows_what_the_plugin_is_known_by() {
        let by_path = PluginError::new(
            "/tmp/no/such/plugin",
            Phase::Install,
            ErrorKind::Io,
            "cannot read /tmp/no/such/plugin: not found",
        );
        let d = by_path.to_diagnostic();
        assert_eq!(d.surface(), Some(&Surface::file("/tmp/no/such/plugin")));
        assert_eq!(shown(&d), "\"/tmp/no/such/plugin\"");
        assert_eq!(d.code(), "plugin.io");

        let manifest = PluginError::new(
            "p/plugin.kdl",
            Phase::Manifest,
            ErrorKind::Invalid,
            "p/plugin.kdl: api 0 is not a generation; write api 1",
        );
        let d = manifest.to_diagnostic();
        assert_eq!(d.surface(), Some(&Surface::file("p/plugin.kdl")));
        // The path the message starts with is said once.
        assert_eq!(
            d.what(),
            "plugin p/plugin.kdl (manifest): api 0 is not a generation"
        );
        assert_eq!(d.next(), "write api 1");

        let runtime =
            PluginError::new(RUNTIME, Phase::Compile, ErrorKind::Unsupported, "no engine");
        assert_eq!(
            runtime.to_diagnostic().surface(),
            Some(&Surface::other("the plugin runtime"))
        );
    }

    #[test]
    fn registered_secrets_never_render() {
        let secret = "sk-plugin-diag-SECRET-91c3";
        smith_diag::secrets::register(secret);
        let err = PluginError::new(
            "acme/leaky",
            Phase::Call("encode"),
            ErrorKind::Guest,
            format!("upstream refused key {secret}; check the key"),
        );
        let d = err.to_diagnostic();
        let plain = d.render_plain();
        assert!(!plain.contains(secret), "{plain}");
        assert!(plain.contains("acme/leaky"), "{plain}");
        assert!(!d.to_json().to_string().contains(secret));
    }
}
