//! "Did you mean": the names closest to a mistyped one, for error messages.

/// Up to `n` of `candidates` closest to `word`, best first: those within a small edit
/// distance (a typo: a letter dropped, doubled, swapped or wrong), then those that contain
/// it or that it contains. Duplicates are dropped.
pub fn closest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    n: usize,
) -> Vec<String> {
    let mut scored: Vec<(usize, &str)> = Vec::new();
    for c in candidates {
        if c.is_empty() || c == word {
            continue;
        }
        let d = strsim::damerau_levenshtein(word, c);
        // One edit per four letters, at least one: `sched_swich` finds `sched_switch`, a
        // short word does not match every other short word.
        let typo = d <= (word.len() / 4).max(1);
        let part = word.len() >= 3 && (c.contains(word) || word.contains(c) && c.len() >= 3);
        if typo || part {
            scored.push((if typo { d } else { 100 + d }, c));
        }
    }
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(n)
        .map(|(_, c)| c.to_string())
        .collect()
}

/// `"; did you mean a, b?"` or `""`.
pub fn did_you_mean(close: &[String]) -> String {
    if close.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", close.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn typos_first_then_containment() {
        let names = [
            "sched_switch",
            "sched_waking",
            "sys_enter_write",
            "sys_exit_write",
        ];
        assert_eq!(closest("sched_swich", names, 3), ["sched_switch"]);
        assert_eq!(closest("sys_enter_wrte", names, 3), ["sys_enter_write"]);
        assert_eq!(
            closest("write", names, 3),
            ["sys_exit_write", "sys_enter_write"]
        );
        assert_eq!(closest("cmm", ["comm", "cpu", "pid", "count"], 3), ["comm"]);
        assert!(closest("zzz", names, 3).is_empty());
    }
}
