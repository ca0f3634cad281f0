//! Cutting a text where its token count is additive: `count(a + b) == count(a) + count(b)`.
//!
//! The tier texts of a session repeat each other: a message's full chunk, its pruned variant and
//! its dense chunk share most of their lines, and lines recur across messages. Counting each
//! distinct piece once and adding up stays exact only where the tokenizer itself cannot join the
//! two sides, which is what this module decides.
//!
//! **The cut.** Between `a` and `b` where `a` ends with `'\n'` and `b` starts with a character
//! that is neither whitespace (Unicode `White_Space`, the regexes' `\s`) nor `'/'`.
//!
//! **Why it is exact** (for `o200k_base` and `cl100k_base`). tiktoken splits a text into regex
//! matches (pre-tokens) and encodes each on its own, so the count is additive over any position
//! that is a pre-token boundary of `a + b` and at which the matches of `a + b` are those of `a`
//! followed by those of `b`. Scan `a + b` from the left:
//! 1. No match runs from `a` into `b`. Only two alternatives can take a `'\n'`: the punctuation
//!    one, whose tail `[\r\n/]*` (cl100k: `[\r\n]*`) stops at a first character of `b` that is
//!    not `\r`, `\n` or `/`; and the whitespace ones (`\s*[\r\n]+`, `\s+(?!\S)`, `\s+`), which
//!    stop at a first character of `b` that is not whitespace. The word and digit alternatives
//!    never take a `'\n'`, so they never reach the end of `a`.
//! 2. Each match inside `a` is the one `a` alone gives. A match could differ only by reading
//!    the first character of `b` where `a` alone has its end: a character class fails on the
//!    end as it fails on that character (by 1.), so the one difference would be the look-ahead
//!    `\s+(?!\S)`, true at the end and false before `b`. It is never tried there: a whitespace
//!    run that reaches the end of `a` ends with `'\n'`, so `\s*[\r\n]+`, an earlier
//!    alternative, matches it first.
//! 3. At the cut the scan starts afresh on `b`, which is then read exactly as `b` alone.
//!
//! The count of the pieces' sum equals the text's count on every text of every recording and
//! on generated texts (tests here and in `tests/it/tokens_exact.rs`).

/// The text in pieces cut at every exact cut (see the module docs); the pieces concatenate to
/// `text`, and none is empty (an empty text gives one empty piece).
pub(super) fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        match next_cut(rest) {
            Some(at) => {
                let (piece, tail) = rest.split_at(at);
                rest = tail;
                Some(piece)
            }
            None => {
                done = true;
                Some(rest)
            }
        }
    })
}

/// The first exact cut inside `text` (never 0 nor `text.len()`).
fn next_cut(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(i) = bytes[from..].iter().position(|b| *b == b'\n') {
        let at = from + i + 1;
        let c = text[at..].chars().next()?;
        if !c.is_whitespace() && c != '/' {
            return Some(at);
        }
        from = at;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::TokenizerKind;
    use super::*;
    use proptest::prelude::*;

    fn cut(text: &str) -> Vec<&str> {
        pieces(text).collect()
    }

    #[test]
    fn cuts_after_a_newline_before_a_word() {
        assert_eq!(cut(""), vec![""]);
        assert_eq!(cut("a\nb"), vec!["a\n", "b"]);
        assert_eq!(cut("a.\n[tool x]\nok"), vec!["a.\n", "[tool x]\n", "ok"]);
        // Before whitespace or '/', and at the very end: no cut.
        assert_eq!(
            cut("a\n b\n\tc\n\nd\n/e\n"),
            vec!["a\n b\n\tc\n\n", "d\n/e\n"]
        );
        assert_eq!(cut("a\n\u{a0}b"), vec!["a\n\u{a0}b"]);
        assert_eq!(cut("x\n漢字"), vec!["x\n", "漢字"]);
    }

    /// Characters chosen to meet every alternative of both patterns at a cut: newlines and
    /// other whitespace (Unicode too), '/', punctuation, contractions, cased and uncased
    /// letters, marks, digits, emoji.
    fn tricky_text() -> impl Strategy<Value = String> {
        let atoms = prop::sample::select(vec![
            "\n", "\n", "\n", "\r\n", "\r", " ", "  ", "\t", "\u{a0}", "\u{2028}", "/", ".", ":",
            "'", "'s", "'LL", "\"", "[", "]", "{", "a", "Ab", "HTTP", "ç", "é", "\u{301}", "ǅ",
            "漢", "7", "123", "4567", "🙂", "-", "_", "x.y", "?!",
        ]);
        prop::collection::vec(atoms, 0..40).prop_map(|v| v.concat())
    }

    /// tiktoken's count of the whole text = ours = the sum of ours over the pieces.
    fn counts_add_up(kind: TokenizerKind, text: &str) -> Result<(), TestCaseError> {
        let reference = match kind {
            TokenizerKind::O200k => tiktoken_rs::o200k_base_singleton(),
            TokenizerKind::Cl100k => tiktoken_rs::cl100k_base_singleton(),
        };
        let tiktoken = reference.encode_ordinary(text).len() as u32;
        let whole = super::super::bpe::count(kind, text);
        let sum: u32 = pieces(text)
            .map(|p| super::super::bpe::count(kind, p))
            .sum();
        prop_assert_eq!(whole, tiktoken, "{:?}", text);
        prop_assert_eq!(sum, whole, "{:?} in {:?}", text, cut(text));
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn pieces_concatenate_to_the_text(text in tricky_text()) {
            prop_assert_eq!(cut(&text).concat(), text.clone());
            prop_assert!(cut(&text).iter().skip(1).all(|p| !p.is_empty()));
        }

        #[test]
        fn o200k_counts_add_up_over_the_cuts(text in tricky_text()) {
            counts_add_up(TokenizerKind::O200k, &text)?;
        }

        #[test]
        fn cl100k_counts_add_up_over_the_cuts(text in tricky_text()) {
            counts_add_up(TokenizerKind::Cl100k, &text)?;
        }
    }

    /// The rule is tight: for each kind of excluded first character there is a text where the
    /// two sides do join, so a looser cut would be wrong.
    #[test]
    fn excluded_cuts_would_change_counts() {
        use super::super::bpe::count;
        use TokenizerKind::O200k;
        for (a, b) in [
            ("x.\n", "/xx"),
            ("xx\n", " \nx"),
            ("xx\n", "\t\nx"),
            ("xx\n", "\nxx"),
            ("xx\n", "\r\nx"),
        ] {
            let joined = format!("{a}{b}");
            assert_ne!(
                count(O200k, &joined),
                count(O200k, a) + count(O200k, b),
                "{joined:?}"
            );
        }
    }
}
