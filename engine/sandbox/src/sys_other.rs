//! Platforms without Landlock or network namespaces: the report says so and
//! nothing is confined by the kernel.

use std::io;

use smith_diag::Diagnostic;

use crate::policy::Policy;
use crate::support::Support;

pub(crate) fn probe() -> Support {
    Support {
        landlock_abi: Err("Landlock exists only on Linux".into()),
        network_namespace: Err("network namespaces exist only on Linux".into()),
    }
}

#[derive(Debug)]
pub(crate) struct Prepared;

pub(crate) fn prepare(_policy: &Policy, _support: &Support) -> Result<Prepared, Diagnostic> {
    Ok(Prepared)
}

impl Prepared {
    pub(crate) fn has_ruleset(&self) -> bool {
        false
    }

    pub(crate) fn has_namespace(&self) -> bool {
        false
    }

    pub(crate) fn enter(&self) -> io::Result<()> {
        Ok(())
    }
}
