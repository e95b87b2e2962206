//! Performance gates: the representative-entry generator, divan benchmarks and the gate table behind `smith bench`.
#![deny(missing_docs)]
