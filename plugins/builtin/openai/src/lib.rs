//! smith/openai: the OpenAI Responses API and Chat Completions as a `smith:plugin@1` provider plugin, wrapping
//! the `smith-providers` adapter (settings: docs/providers.md).

smith_plugin_adapter_glue::vendor_plugin!(smith_plugin_adapter_glue::OpenAi);
