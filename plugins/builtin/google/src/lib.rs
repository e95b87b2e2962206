//! smith/google: Google Gemini as a `smith:plugin@1` provider plugin, wrapping
//! the `smith-providers` adapter (settings: docs/providers.md).

smith_plugin_adapter_glue::vendor_plugin!(smith_plugin_adapter_glue::Google);
