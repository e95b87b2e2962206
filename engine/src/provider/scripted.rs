//! The mock provider's script format (`--mock-script`) and the scripted
//! provider that plays it, defined once in `smith-contract` and re-exported
//! here: the host reads a script before a run to check it and name its
//! errors; the provider that plays it in the product is the built-in
//! smith/mock plugin (`plugins/builtin/mock`), built from the same code.
//! The format is documented in `docs/mock-provider.md`.

pub use smith_contract::scripted::{
    MOCK_MODEL, Script, ScriptError, ScriptEvent, ScriptFile, ScriptThinking, ScriptToolCall,
    ScriptedProvider, parse_script,
};
