//! The built-in plugins, compiled from plugins/builtin/* for wasm32-wasip2
//! by build.rs and embedded in the binary.

/// The smith/mock provider component (the scripted provider).
pub const MOCK: &[u8] = include_bytes!(concat!(
    env!("SMITH_PLUGIN_GUESTS"),
    "/smith_plugin_mock.wasm"
));

/// The smith/product extension component (layout, theme, keys, commands,
/// tool presentation).
pub const PRODUCT: &[u8] = include_bytes!(concat!(
    env!("SMITH_PLUGIN_GUESTS"),
    "/smith_plugin_product.wasm"
));

/// A built-in plugin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Builtin {
    /// Its name.
    pub name: &'static str,
    /// Its world (`provider` or `extension`).
    pub world: &'static str,
    /// One line about it.
    pub description: &'static str,
    /// The component bytes.
    pub component: &'static [u8],
    /// The capabilities it is granted, as a manifest would list them.
    pub capabilities: &'static [(&'static str, &'static str)],
}

/// Every built-in plugin, in load order.
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "smith/mock",
        world: "provider",
        description: "The scripted provider: plays a JSON script or the offline demo",
        component: MOCK,
        capabilities: &[],
    },
    Builtin {
        name: "smith/product",
        world: "extension",
        description: "The default layout, theme, keybindings, commands and tool presentation",
        component: PRODUCT,
        capabilities: &[("ui", "")],
    },
];

/// The mock provider as a plugin: `script` is `(json text, origin)`, or
/// `None` for the built-in demo. `cache_dir` is where compiled components
/// are cached (the first run compiles, later runs load); `limits` are the
/// plugin's deadlines and memory cap.
///
/// # Errors
///
/// [`InstantiateError::Rejected`] with the script parser's message (naming
/// the origin) when the script is invalid; [`InstantiateError::Failed`]
/// when the runtime is unavailable or the plugin fails.
pub fn mock_provider(
    script: Option<(&str, &str)>,
    cache_dir: Option<&std::path::Path>,
    limits: crate::Limits,
) -> Result<crate::WasmProvider, crate::InstantiateError> {
    let component = crate::ProviderComponent::load("smith/mock", MOCK, cache_dir, limits)?;
    let settings: Vec<(String, String)> = match script {
        Some((text, origin)) => vec![
            ("script".to_owned(), text.to_owned()),
            ("origin".to_owned(), origin.to_owned()),
        ],
        None => Vec::new(),
    };
    component.instantiate_checked(&settings)
}

/// Where the build put every guest component it built: the built-ins, the
/// SDK example (`smith_plugin_hello.wasm`) and the hostile test guests.
/// Tests of other crates install the example from here.
pub const GUESTS_DIR: &str = env!("SMITH_PLUGIN_GUESTS");
