//! [`ThinkingDial`]: the thinking level a live provider's requests ask
//! for, shared with the frontend that changes it during a run
//! (`/thinking` in the interface).
//!
//! The level is what the user asked for (`--thinking`, the `thinking`
//! option, `/thinking`); what a request carries is decided per request by
//! the capability gate ([`smith_catalog::gate`]) against the target model's
//! advertised levels: the level itself when the model offers it, the
//! nearest level it offers below (else its lowest), or none for a model
//! that does not think on request. The dial also keeps what the current
//! target offers, so the frontend can show the levels and the gate's
//! warning before anything is sent.

use std::sync::{Arc, Mutex, MutexGuard};

use smith_catalog::{ModelInfo as CatalogModel, RequestNeeds, ThinkingLevel};
use smith_diag::Diagnostic;

/// The names `--thinking`, the `thinking` option and `/thinking` take, in
/// ascending order: `off` and the catalog's levels.
pub const LEVEL_NAMES: [&str; 6] = ["off", "minimal", "low", "medium", "high", "max"];

/// Parses a thinking level name: `Ok(None)` for `off`, `Ok(Some(level))`
/// for a catalog level.
///
/// # Errors
///
/// A sentence naming `given` and the valid names, to follow "because" or
/// stand alone.
pub fn parse_level(given: &str) -> Result<Option<ThinkingLevel>, String> {
    let name = given.trim().to_ascii_lowercase();
    if name == "off" {
        return Ok(None);
    }
    ThinkingLevel::parse(&name).map(Some).ok_or_else(|| {
        format!(
            "{given:?} is not a thinking level; the levels are {}",
            LEVEL_NAMES.join(", ")
        )
    })
}

/// The name of `level` as the options write it (`off` for none).
pub fn level_name(level: Option<ThinkingLevel>) -> &'static str {
    level.map_or("off", ThinkingLevel::as_str)
}

/// What the current target of a live provider offers.
#[derive(Debug, Clone, PartialEq)]
pub struct Offered {
    /// The target, as `provider/model[@bucket]`.
    pub reference: String,
    /// The levels its catalog entry lists (with its family's filling in an
    /// unknown field): `Some(empty)` for a model listed without thinking,
    /// `None` when the catalog does not say.
    pub levels: Option<Vec<ThinkingLevel>>,
}

#[derive(Debug, Default)]
struct State {
    level: Option<ThinkingLevel>,
    /// The current target: its reference, model and family.
    target: Option<(String, CatalogModel, Option<CatalogModel>)>,
}

/// The thinking level requests ask for, shared between a live provider
/// and its frontend. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct ThinkingDial {
    state: Arc<Mutex<State>>,
}

impl ThinkingDial {
    /// A dial asking for `level` (`None`: off).
    pub fn new(level: Option<ThinkingLevel>) -> ThinkingDial {
        let dial = ThinkingDial::default();
        dial.lock().level = level;
        dial
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is two plain values; a panic elsewhere cannot leave it
        // half-written.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The level asked for (`None`: off).
    pub fn level(&self) -> Option<ThinkingLevel> {
        self.lock().level
    }

    /// Asks for `level` from the next request on (`None`: off).
    pub fn set(&self, level: Option<ThinkingLevel>) {
        self.lock().level = level;
    }

    /// Records the target requests go to now (the live provider calls
    /// this when it resolves a model and before each request).
    pub fn track(&self, reference: String, model: &CatalogModel, family: Option<&CatalogModel>) {
        let mut state = self.lock();
        let same = state
            .target
            .as_ref()
            .is_some_and(|(r, m, f)| *r == reference && m == model && f.as_ref() == family);
        if !same {
            state.target = Some((reference, model.clone(), family.cloned()));
        }
    }

    /// What the current target offers; `None` before a target is known.
    pub fn offered(&self) -> Option<Offered> {
        let state = self.lock();
        let (reference, model, family) = state.target.as_ref()?;
        Some(Offered {
            reference: reference.clone(),
            levels: smith_catalog::gate::effective(model, family.as_ref()).thinking,
        })
    }

    /// The level a request to the current target carries, and the gate's
    /// `gate.thinking` warning when that is not the level asked for.
    /// Before a target is known: the level asked for, no warning.
    pub fn effective(&self) -> (Option<ThinkingLevel>, Option<Diagnostic>) {
        let state = self.lock();
        let Some((_, model, family)) = state.target.as_ref() else {
            return (state.level, None);
        };
        let needs = RequestNeeds {
            thinking: state.level,
            ..RequestNeeds::default()
        };
        match smith_catalog::gate(model, family.as_ref(), &needs) {
            Ok(gated) => (
                gated.needs.thinking,
                gated
                    .warnings
                    .into_iter()
                    .find(|w| w.code() == "gate.thinking"),
            ),
            // Thinking alone never fails the gate; nothing is sent then.
            Err(_) => (None, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(levels: Option<Vec<ThinkingLevel>>) -> CatalogModel {
        let mut m = CatalogModel::new("p", "m");
        m.thinking = levels;
        m
    }

    #[test]
    fn names_parse_to_levels_and_anything_else_names_the_valid_ones() {
        assert_eq!(parse_level("off"), Ok(None));
        assert_eq!(parse_level("High"), Ok(Some(ThinkingLevel::High)));
        assert_eq!(parse_level("minimal"), Ok(Some(ThinkingLevel::Minimal)));
        for name in LEVEL_NAMES {
            let level = parse_level(name).unwrap();
            assert_eq!(level_name(level), name);
        }
        let refused = parse_level("hgh").unwrap_err();
        assert!(refused.contains("\"hgh\""), "{refused}");
        assert!(
            refused.contains("off, minimal, low, medium, high, max"),
            "{refused}"
        );
    }

    #[test]
    fn the_gate_decides_what_the_current_target_gets() {
        let dial = ThinkingDial::new(Some(ThinkingLevel::High));
        // No target yet: the level asked for, nothing to warn about.
        assert_eq!(dial.effective(), (Some(ThinkingLevel::High), None));
        assert_eq!(dial.offered(), None);

        let offers = model(Some(vec![ThinkingLevel::Low, ThinkingLevel::High]));
        dial.track("p/m".into(), &offers, None);
        assert_eq!(dial.effective(), (Some(ThinkingLevel::High), None));
        assert_eq!(
            dial.offered().unwrap().levels,
            Some(vec![ThinkingLevel::Low, ThinkingLevel::High])
        );

        // A level between two offered ones: the nearest below, with the
        // gate's warning.
        dial.set(Some(ThinkingLevel::Medium));
        let (level, warning) = dial.effective();
        assert_eq!(level, Some(ThinkingLevel::Low));
        let warning = warning.unwrap();
        assert_eq!(warning.code(), "gate.thinking");
        assert!(warning.what().contains("using `low`"), "{}", warning.what());

        // A model listed without thinking: off, with the warning.
        dial.track("p/plain".into(), &model(Some(vec![])), None);
        let (level, warning) = dial.effective();
        assert_eq!(level, None);
        assert!(warning.unwrap().what().contains("thinking is off"));

        // Off asks for nothing and warns about nothing.
        dial.set(None);
        assert_eq!(dial.effective(), (None, None));
    }
}
