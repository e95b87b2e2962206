//! Did-you-mean suggestions.

use smith_diag::suggest::distance;

/// The candidate closest to `input` by edit distance, when it is close enough
/// to be a plausible typo (at most a third of the input's length, at least 2).
pub(crate) fn closest<'a>(
    input: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (input.chars().count() / 3).max(2);
    candidates
        .into_iter()
        .map(|c| (distance(input, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, c)| (*d, *c))
        .map(|(_, c)| c)
}

/// ` (did you mean `x`?)` or nothing.
pub(crate) fn did_you_mean<'a>(
    input: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> String {
    closest(input, candidates).map_or_else(String::new, |c| format!("; did you mean `{c}`?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_typos_and_ignores_strangers() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(closest("theem", ["theme", "mouse"]), Some("theme"));
        assert_eq!(closest("zzzzzz", ["theme", "mouse"]), None);
    }
}
