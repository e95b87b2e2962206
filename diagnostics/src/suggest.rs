//! How near a mistyped word is to the words it may have meant: the one
//! measure every did-you-mean suggestion uses (commands, options, keys).

/// The optimal string alignment distance between `a` and `b`: insertions,
/// deletions, substitutions and transpositions of neighbours each count 1.
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for (i, cell) in d.iter_mut().step_by(width).enumerate() {
        *cell = i;
    }
    for (j, cell) in d.iter_mut().take(width).enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::distance;

    #[test]
    fn distance_counts_edits_and_transpositions() {
        assert_eq!(distance("session", "session"), 0);
        assert_eq!(distance("sesion", "session"), 1);
        assert_eq!(distance("sessoin", "session"), 1);
        assert_eq!(distance("sessions", "session"), 1);
        assert_eq!(distance("replace", "replay"), 2);
        assert_eq!(distance("", "abc"), 3);
    }

    #[test]
    fn substitutions_insertions_and_deletions_each_count_one() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("moddel", "model"), 1);
    }
}
