//! The needles a tier is judged by (MODEL §2): the identifiers of its episode's full tier —
//! advisories and tickets, versions, hashes, paths (with line numbers), error codes. The tier
//! audit counts their survival; the generators keep every needle of a lower tier in every higher
//! one (see `tiers::keep_lower_needles`).

use std::collections::BTreeSet;

use once_cell::sync::Lazy;
use regex::Regex;

static IDENT: Lazy<Regex> = Lazy::new(|| {
    Regex::new(concat!(
        r"\b[A-Z][A-Z0-9]+-\d{2,}(?:-\d+)?\b",
        r"|\bv?\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?\b",
        r"|\b[0-9a-f]{7,40}\b",
        r"|/?(?:[\w.-]+/)+[\w.-]+\.[A-Za-z]\w*(?::\d+)*",
        r"|\bE\d{4}\b",
    ))
    .expect("static identifier pattern")
});

/// A hex run is a hash only if it mixes digits and letters (not a word like "deadbeef" alone,
/// not a plain number).
fn is_identifier(s: &str) -> bool {
    if s.len() >= 7 && s.chars().all(|c| c.is_ascii_hexdigit()) {
        return s.chars().any(|c| c.is_ascii_digit()) && s.chars().any(|c| c.is_ascii_alphabetic());
    }
    true
}

/// The identifiers in `text`, sorted and unique.
pub fn identifiers(text: &str) -> BTreeSet<String> {
    // No match spans a line, and every identifier holds a `/` or a `\d` (an ASCII digit, or a
    // character outside ASCII: a hex run without a digit is no identifier), so only the lines
    // that hold one are searched; the others cost a byte scan instead of the regex.
    text.split('\n')
        .filter(|l| {
            l.bytes()
                .any(|b| b.is_ascii_digit() || b == b'/' || !b.is_ascii())
        })
        .flat_map(|l| IDENT.find_iter(l))
        .map(|m| m.as_str().to_owned())
        .filter(|s| is_identifier(s))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        // Line by line is the same as the whole text at once (the regex over all of it).
        #[test]
        fn lines_without_a_digit_or_slash_hold_no_identifier(
            text in "([A-Fa-fEvx0-9/.:\\- \n]|é|٤|\u{2066}){0,80}",
        ) {
            let whole: BTreeSet<String> = IDENT
                .find_iter(&text)
                .map(|m| m.as_str().to_owned())
                .filter(|s| is_identifier(s))
                .collect();
            proptest::prop_assert_eq!(identifiers(&text), whole);
        }
    }

    #[test]
    fn finds_paths_versions_hashes_codes() {
        let ids = identifiers(
            "vendor/cfgkit-0.2.3/Cargo.toml:10 at 0.4.1, aeb1821 not deadbeef, E0432 GHSA-12-3",
        );
        for want in [
            "vendor/cfgkit-0.2.3/Cargo.toml:10",
            "0.4.1",
            "aeb1821",
            "E0432",
        ] {
            assert!(ids.contains(want), "{want} in {ids:?}");
        }
        assert!(!ids.contains("deadbeef"));
        // `\d` is Unicode: a line whose only digits are not ASCII is searched too.
        assert!(identifiers("no ascii digit here\nsee E٤٤٤٤ now").contains("E٤٤٤٤"));
    }
}
