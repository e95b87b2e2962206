//! The machine a report was measured on: processor model, family and
//! model numbers, the instruction-set extensions the gates' code can use,
//! and the number of processors.
//!
//! Ratios to a floor differ between processor kinds (the walk and memcpy do
//! not scale alike), so every report names the processor beside its
//! figures. On Linux the description comes from `/proc/cpuinfo`; elsewhere,
//! or when that file cannot be read, the fields say `unknown`.

use std::fmt;

/// The extensions worth naming beside a figure: the SIMD widths the UTF-8
/// validators and memcpy use, and the bit-manipulation and hash
/// instructions of the store's checksums.
const NAMED_FLAGS: [&str; 7] = [
    "sse4_2",
    "avx2",
    "avx512f",
    "avx512bw",
    "bmi2",
    "sha_ni",
    "pclmulqdq",
];

/// The processor a report was measured on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// The processor's name (`model name`), or `unknown`.
    pub model_name: String,
    /// The processor family number, when known.
    pub family: Option<u32>,
    /// The processor model number, when known.
    pub model: Option<u32>,
    /// Which of the named extensions the processor has, in a fixed order.
    pub flags: Vec<&'static str>,
    /// Processors available to this process.
    pub cpus: usize,
}

impl Machine {
    /// The machine this process runs on.
    pub fn current() -> Machine {
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        match std::fs::read_to_string("/proc/cpuinfo") {
            Ok(text) => Machine::from_cpuinfo(&text, cpus),
            Err(_) => Machine::unknown(cpus),
        }
    }

    /// A machine with nothing known but its processor count.
    pub fn unknown(cpus: usize) -> Machine {
        Machine {
            model_name: "unknown".into(),
            family: None,
            model: None,
            flags: Vec::new(),
            cpus,
        }
    }

    /// Reads the first processor's description from the text of
    /// `/proc/cpuinfo` (x86 field names).
    pub fn from_cpuinfo(text: &str, cpus: usize) -> Machine {
        let mut m = Machine::unknown(cpus);
        // The first processor's block ends at the first empty line.
        for line in text.lines().take_while(|l| !l.trim().is_empty()) {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match key.trim() {
                "model name" if !value.is_empty() => m.model_name = value.to_owned(),
                "cpu family" => m.family = value.parse().ok(),
                "model" => m.model = value.parse().ok(),
                "flags" => {
                    let have: Vec<&str> = value.split_whitespace().collect();
                    m.flags = NAMED_FLAGS
                        .iter()
                        .copied()
                        .filter(|f| have.contains(f))
                        .collect();
                }
                _ => {}
            }
        }
        m
    }
}

impl fmt::Display for Machine {
    /// One line for people: `Intel(R) Xeon(R) Processor (family 6 model
    /// 207; avx2 avx512f bmi2), 2 processors`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.model_name)?;
        let mut inner = Vec::new();
        if let (Some(family), Some(model)) = (self.family, self.model) {
            inner.push(format!("family {family} model {model}"));
        }
        if !self.flags.is_empty() {
            inner.push(self.flags.join(" "));
        }
        if !inner.is_empty() {
            write!(f, " ({})", inner.join("; "))?;
        }
        let s = if self.cpus == 1 { "" } else { "s" };
        write!(f, ", {} processor{s}", self.cpus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_first_processor_of_cpuinfo() {
        let text = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 23\nmodel\t\t: 1\n\
                    model name\t: AMD EPYC Processor\nflags\t\t: fpu sse4_2 avx2 bmi2 sha_ni\n\n\
                    processor\t: 1\nmodel name\t: Other\n";
        let m = Machine::from_cpuinfo(text, 2);
        assert_eq!(m.model_name, "AMD EPYC Processor");
        assert_eq!((m.family, m.model), (Some(23), Some(1)));
        assert_eq!(m.flags, vec!["sse4_2", "avx2", "bmi2", "sha_ni"]);
        assert_eq!(
            m.to_string(),
            "AMD EPYC Processor (family 23 model 1; sse4_2 avx2 bmi2 sha_ni), 2 processors"
        );
    }

    #[test]
    fn says_unknown_when_nothing_is_known() {
        let m = Machine::from_cpuinfo("", 1);
        assert_eq!(m, Machine::unknown(1));
        assert_eq!(m.to_string(), "unknown, 1 processor");
    }
}
