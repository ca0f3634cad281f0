//! How a delta (B − A) reads in the CLI table and the explorer's diff screen alike: signed,
//! `·` for no difference, `~0` for a difference too small to show at the precision.

/// `+3`, `-12`, or `·` for zero.
pub fn signed(v: i64) -> String {
    if v == 0 {
        "·".into()
    } else {
        format!("{v:+}")
    }
}

/// `+0.0012` at `prec` decimals, `·` for zero, `~0` when not zero but too small for `prec`
/// (instead of printing "-0.00000").
pub fn signed_f(v: f64, prec: usize) -> String {
    let shown = format!("{v:+.prec$}");
    if v == 0.0 {
        "·".into()
    } else if shown
        .trim_start_matches(['+', '-'])
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        "~0".into()
    } else {
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_tiny_and_shown() {
        assert_eq!(signed(0), "·");
        assert_eq!(signed(-4), "-4");
        assert_eq!(signed(7), "+7");
        assert_eq!(signed_f(0.0, 2), "·");
        assert_eq!(signed_f(-0.000_001, 5), "~0");
        assert_eq!(signed_f(0.25, 1), "+0.2");
        assert_eq!(signed_f(-1.5, 1), "-1.5");
    }
}
