//! [`Diagnose`]: the one trait for "this error has a diagnostic", and the
//! [`Registry`] that finds such errors behind `dyn std::error::Error`.
//!
//! Every smith crate with its own error types implements [`Diagnose`] for
//! each of them, and lists the ones that may travel inside a boxed error
//! chain (an `anyhow::Error`, a `Box<dyn Error>`) in one constant slice of
//! [`Finder`]s, made with [`finder`]:
//!
//! ```
//! use smith_diag::{Diagnose, Diagnostic, Finder};
//!
//! #[derive(Debug)]
//! struct Oops;
//! impl std::fmt::Display for Oops {
//!     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
//!         f.write_str("oops")
//!     }
//! }
//! impl std::error::Error for Oops {}
//! impl Diagnose for Oops {
//!     fn to_diagnostic(&self) -> Diagnostic {
//!         Diagnostic::error("demo.oops", "it went wrong", "a demo", "try again")
//!     }
//! }
//!
//! /// This crate's diagnosable errors.
//! pub const DIAGNOSABLE: &[Finder] = &[smith_diag::finder::<Oops>];
//!
//! let registry = smith_diag::Registry::new().with(DIAGNOSABLE);
//! let boxed: Box<dyn std::error::Error> = Box::new(Oops);
//! let d = registry.find(boxed.as_ref()).unwrap().to_diagnostic();
//! assert_eq!(d.code(), "demo.oops");
//! ```
//!
//! A program's reporter builds one [`Registry`] from the slices of the
//! crates it links and asks it, for each cause in an error chain, whether
//! that cause has a diagnostic. The diagnostic travels as a value: nothing
//! renders it to text and reads the text back.

use std::error::Error;

use crate::Diagnostic;

/// An error that can say what happened, why, and what to do next as a
/// [`Diagnostic`].
///
/// Implemented by every error type of the smith crates (and by
/// [`Diagnostic`] itself, which gives a copy of itself). The conversion
/// is total: every value of the type has a complete diagnostic, with its
/// three parts, a stable code, and where known the offending value and the
/// [`Surface`](crate::Surface) it came from.
///
/// Each call builds a fresh diagnostic; when the audit log is on (see
/// [`crate::audit`]), each one built is recorded when it is dropped.
pub trait Diagnose {
    /// This error as a diagnostic.
    fn to_diagnostic(&self) -> Diagnostic;
}

impl Diagnose for Diagnostic {
    fn to_diagnostic(&self) -> Diagnostic {
        self.clone()
    }
}

/// Looks behind a `dyn Error` for one concrete [`Diagnose`] type; made by
/// [`finder`].
pub type Finder = fn(&(dyn Error + 'static)) -> Option<Diagnostic>;

/// The [`Finder`] for `T`: the diagnostic of `error` when it is a `T`.
pub fn finder<T: Diagnose + Error + 'static>(error: &(dyn Error + 'static)) -> Option<Diagnostic> {
    error.downcast_ref::<T>().map(Diagnose::to_diagnostic)
}

/// The diagnosable error types a program knows, to find one behind a
/// `dyn Error` (a cause in an `anyhow` chain, say).
///
/// It always knows [`Diagnostic`]; each crate adds its own list with
/// [`Registry::with`].
#[derive(Debug, Clone)]
pub struct Registry {
    finders: Vec<Finder>,
}

impl Registry {
    /// A registry that knows [`Diagnostic`] only.
    pub fn new() -> Registry {
        Registry {
            finders: vec![finder::<Diagnostic>],
        }
    }

    /// This registry, also knowing the types `finders` look for.
    #[must_use]
    pub fn with(mut self, finders: &[Finder]) -> Registry {
        self.finders.extend_from_slice(finders);
        self
    }

    /// The diagnostic of `error`, when it is one of the known types.
    pub fn find(&self, error: &(dyn Error + 'static)) -> Option<Diagnostic> {
        self.finders.iter().find_map(|find| find(error))
    }
}

impl Default for Registry {
    fn default() -> Registry {
        Registry::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diagnostic_is_found_by_every_registry_and_other_errors_are_not() {
        let d = Diagnostic::error("x.y", "w", "y", "n").with_value("v");
        let boxed: Box<dyn Error + Send + Sync> = Box::new(d.clone());
        let found = Registry::new().find(boxed.as_ref()).unwrap();
        assert_eq!(found.to_diagnostic(), d);

        let io = std::io::Error::other("disk on fire");
        assert!(Registry::new().find(&io).is_none());
    }

    #[test]
    fn a_registered_type_is_found() {
        #[derive(Debug)]
        struct Oops;
        impl std::fmt::Display for Oops {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("oops")
            }
        }
        impl Error for Oops {}
        impl Diagnose for Oops {
            fn to_diagnostic(&self) -> Diagnostic {
                Diagnostic::error("t.oops", "it broke", "a test", "nothing")
            }
        }
        assert!(Registry::new().find(&Oops).is_none());
        let registry = Registry::new().with(&[finder::<Oops>]);
        assert_eq!(
            registry.find(&Oops).unwrap().to_diagnostic().code(),
            "t.oops"
        );
    }
}
