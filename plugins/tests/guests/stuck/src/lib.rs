//! test/stuck: an extension guest that never finishes `contribute`, so any
//! instantiation (a load, a reload) runs into the call deadline. The
//! binary's diagnostics audit reloads it to see the deadline reported.

use smith_plugin_sdk::extension::exports::smith::plugin::extension as ext;

struct Stuck;

fn spin_forever() -> ! {
    let mut x: u64 = 0;
    loop {
        x = std::hint::black_box(x.wrapping_add(1));
    }
}

impl ext::Guest for Stuck {
    fn contribute() -> ext::Contributions {
        spin_forever()
    }

    fn run_command(_name: String, _argument: String) -> Result<Vec<ext::Action>, String> {
        spin_forever()
    }

    fn handle(_event: ext::LifecycleEvent) -> ext::HandlerResult {
        spin_forever()
    }
}

smith_plugin_sdk::extension::export_extension!(Stuck);
