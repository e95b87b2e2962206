//! What a plugin floods the host with costs the host next to nothing: the
//! items over a plugin's caps per run ([`crate::rate`]) are counted where
//! they cross into the host, never copied out of the plugin's memory.
//!
//! - `host.log` is linked by hand ([`link_log`]): its message arrives as a
//!   borrowed [`WasmStr`], read (and checked as UTF-8) only when the line
//!   is under the cap.
//! - `extension.handle` returns a [`CappedResult`], whose list of actions
//!   lifts at most as many UI intents as the plugin's cap still has room
//!   for ([`with_ui_room`]); the UI intents after them are counted from
//!   their case tag alone, the other actions lifted as usual.
//!
//! The lifting works with the canonical ABI through wasmtime's own
//! (documentation-hidden) lifting interface, the one its derive macros
//! use; `Cargo.lock` pins the wasmtime release it is written for, and the
//! tests in `tests/plugin_limits.rs` and `plugins/tests` exercise it.

use std::cell::Cell;

use wasmtime::StoreContextMut;
use wasmtime::component::__internal::{CanonicalAbiInfo, InstanceType, InterfaceType, LiftContext};
use wasmtime::component::{ComponentType, Lift, Linker, WasmStr};

use crate::bindings::extension::exports::smith::plugin::extension::{Action, Decision};
use crate::bindings::provider::smith::plugin::host::LogLevel;
use crate::rate::Kind;
use crate::runtime::State;

thread_local! {
    /// How many UI intents the result being lifted on this thread may keep.
    static UI_ROOM: Cell<u64> = const { Cell::new(u64::MAX) };
}

/// Runs `call` (a call into a plugin whose result is a [`CappedResult`])
/// with room for `room` UI intents in its result.
pub(crate) fn with_ui_room<R>(room: u64, call: impl FnOnce() -> R) -> R {
    let before = UI_ROOM.replace(room);
    let result = call();
    UI_ROOM.set(before);
    result
}

/// `extension.handle`'s `handler-result`, with its actions capped.
#[derive(ComponentType, Lift)]
#[component(variant)]
pub(crate) enum CappedResult {
    #[component(name = "none")]
    None,
    #[component(name = "decision")]
    Decision(Decision),
    #[component(name = "actions")]
    Actions(CappedActions),
}

/// A `list<action>` of which only the UI intents that fit were lifted.
pub(crate) struct CappedActions {
    /// The actions kept, in the plugin's order.
    pub(crate) kept: Vec<Action>,
    /// The UI intents over the room, counted and not lifted.
    pub(crate) skipped: u64,
}

// SAFETY: the same canonical ABI as `Vec<Action>` (a pointer and a
// length), type-checked as that list.
unsafe impl ComponentType for CappedActions {
    type Lower = <Vec<Action> as ComponentType>::Lower;

    const ABI: CanonicalAbiInfo = CanonicalAbiInfo::POINTER_PAIR;

    fn typecheck(ty: &InterfaceType, types: &InstanceType<'_>) -> wasmtime::Result<()> {
        <Vec<Action> as ComponentType>::typecheck(ty, types)
    }
}

// SAFETY: reads the list as the canonical ABI lays it out, bounds and
// alignment checked before any element is read.
unsafe impl Lift for CappedActions {
    fn linear_lift_from_flat(
        cx: &mut LiftContext<'_>,
        ty: InterfaceType,
        src: &Self::Lower,
    ) -> wasmtime::Result<Self> {
        let ptr = src[0].get_u32();
        let len = src[1].get_u32();
        lift_capped(cx, ty, ptr, len)
    }

    fn linear_lift_from_memory(
        cx: &mut LiftContext<'_>,
        ty: InterfaceType,
        bytes: &[u8],
    ) -> wasmtime::Result<Self> {
        let word = |at: usize| {
            bytes
                .get(at..at + 4)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(u32::from_le_bytes)
                .ok_or_else(|| wasmtime::format_err!("list pointer out of bounds"))
        };
        lift_capped(cx, ty, word(0)?, word(4)?)
    }
}

fn lift_capped(
    cx: &mut LiftContext<'_>,
    ty: InterfaceType,
    ptr: u32,
    len: u32,
) -> wasmtime::Result<CappedActions> {
    let InterfaceType::List(list) = ty else {
        wasmtime::bail!("a handler result's actions are not a list")
    };
    let element = cx.types[list].element;
    let ui_case = ui_case(cx, element)?;
    let size = <Action as ComponentType>::SIZE32;
    let align = <Action as ComponentType>::ALIGN32 as usize;
    let (ptr, len) = (ptr as usize, len as usize);
    let memory = cx.memory();
    let end = len
        .checked_mul(size)
        .and_then(|bytes| bytes.checked_add(ptr))
        .filter(|&end| end <= memory.len())
        .ok_or_else(|| wasmtime::format_err!("list pointer/length out of bounds of memory"))?;
    if ptr % align != 0 {
        wasmtime::bail!("list pointer is not aligned")
    }
    let mut room = UI_ROOM.get();
    let mut kept = Vec::new();
    let mut skipped = 0u64;
    for at in (ptr..end).step_by(size.max(1)) {
        let bytes = &memory[at..at + size];
        let ui = u32::from(bytes[0]) == ui_case;
        if ui {
            if room == 0 {
                skipped += 1;
                continue;
            }
            room -= 1;
        }
        kept.push(Action::linear_lift_from_memory(cx, element, bytes)?);
    }
    Ok(CappedActions { kept, skipped })
}

/// The case index of `ui` in the `action` variant (its tag is one byte:
/// the variant has fewer than 256 cases).
fn ui_case(cx: &LiftContext<'_>, element: InterfaceType) -> wasmtime::Result<u32> {
    let InterfaceType::Variant(variant) = element else {
        wasmtime::bail!("an action is not a variant")
    };
    let cases = &cx.types[variant].cases;
    if cases.len() > 256 {
        wasmtime::bail!("the action variant has more than 256 cases")
    }
    cases
        .keys()
        .position(|name| name == "ui")
        .and_then(|i| u32::try_from(i).ok())
        .ok_or_else(|| wasmtime::format_err!("the action variant has no `ui` case"))
}

/// Links `smith:plugin/host.log` over the generated binding: a line over
/// the plugin's cap is counted from its pointer and length alone.
pub(crate) fn link_log(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let linked = linker
        .instance("smith:plugin/host@1.0.0")
        .and_then(|mut host| {
            host.func_wrap(
                "log",
                |mut store: StoreContextMut<'_, State>, (level, message): (LogLevel, WasmStr)| {
                    let state = store.data_mut();
                    if !state.budget.admit(Kind::Log, 1) {
                        return state.log_dropped_in_call();
                    }
                    if state.log_full() {
                        state.log_dropped += 1;
                        return state.log_dropped_in_call();
                    }
                    let message = message.to_str(&store)?.into_owned();
                    store.data_mut().keep_log(level, message);
                    Ok(())
                },
            )
        });
    linker.allow_shadowing(false);
    linked
}
