//! Themes: flat semantic keys (television style) mapped to ratatui styles. Built-in themes are
//! embedded from `themes/*.toml`; a file `themes/<name>.toml` in the user's config dir
//! (`$TIERSCOPE_CONFIG_DIR`, else the XDG config dir via etcetera + `tierscope/`) overrides them
//! key by key (patch semantics: it only names what it changes).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

/// The built-in themes, embedded so the binary needs no files.
pub const BUILTIN: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.toml"),
    ),
    ("mono", include_str!("../../themes/mono.toml")),
];

pub const DEFAULT_THEME: &str = "dark";

#[derive(Debug, thiserror::Error)]
pub enum ThemeError {
    #[error("unknown theme {0:?} (built-in: dark, light, high-contrast, mono; or a file in {1})")]
    Unknown(String, String),
    #[error("theme {name}")]
    Toml {
        name: String,
        #[source]
        source: toml::de::Error,
    },
    #[error("theme {name}: key {key:?}: {msg}")]
    Key {
        name: String,
        key: String,
        msg: String,
    },
    #[error("theme file {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

macro_rules! theme_struct {
    ($( $(#[$m:meta])* $field:ident ),* $(,)?) => {
        /// Semantic styles; views ask for a meaning, never for a colour.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Theme {
            pub name: String,
            $( $(#[$m])* pub $field: Style, )*
        }

        impl Theme {
            /// Every key a theme file may set.
            pub const KEYS: &'static [&'static str] = &[$(stringify!($field)),*];

            fn blank(name: &str) -> Theme {
                Theme { name: name.to_owned(), $( $field: Style::default(), )* }
            }

            fn slot(&mut self, key: &str) -> Option<&mut Style> {
                match key {
                    $( stringify!($field) => Some(&mut self.$field), )*
                    _ => None,
                }
            }
        }
    };
}

theme_struct! {
    /// Base text and background.
    base,
    /// Secondary text (labels, units, hints).
    dim,
    border,
    border_focus,
    title,
    title_focus,
    /// The header line.
    header,
    /// Selected row or item (must stay visible without colour: use `reversed`).
    selection,
    /// The request cursor column in the heatmap and charts.
    cursor,
    status,
    status_key,
    key,
    error,
    warn,
    ok,
    search_match,
    tier_full,
    tier_dense,
    tier_compact,
    tier_anchor,
    tier_dropped,
    /// The active episode (rendered as it stands).
    tier_active,
    /// A heatmap cell before the episode exists.
    tier_future,
    mark_change,
    mark_hold,
    mark_deferred,
    mark_thrash,
    line_tokens,
    line_budget,
    line_demote,
    line_promote,
    line_target,
    line_recorded,
    divergence,
    chunk_changed,
    gauge_ok,
    gauge_warn,
    gauge_over,
    slider,
    slider_knob,
}

/// A style as written in a theme file: `"red"` (foreground only) or
/// `{ fg = "#rrggbb", bg = "black", bold = true, reversed = true, … }`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum StyleSpec {
    Fg(String),
    Full(FullSpec),
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FullSpec {
    fg: Option<String>,
    bg: Option<String>,
    #[serde(default)]
    bold: bool,
    #[serde(default)]
    dim: bool,
    #[serde(default)]
    italic: bool,
    #[serde(default)]
    underlined: bool,
    #[serde(default)]
    reversed: bool,
}

fn parse_color(s: &str) -> Result<Color, String> {
    Color::from_str(s).map_err(|_| format!("not a colour: {s:?} (a name, #rrggbb or 0-255)"))
}

impl StyleSpec {
    fn to_style(&self) -> Result<Style, String> {
        match self {
            StyleSpec::Fg(c) => Ok(Style::default().fg(parse_color(c)?)),
            StyleSpec::Full(f) => {
                let mut st = Style::default();
                if let Some(c) = &f.fg {
                    st = st.fg(parse_color(c)?);
                }
                if let Some(c) = &f.bg {
                    st = st.bg(parse_color(c)?);
                }
                let mut m = Modifier::empty();
                for (on, flag) in [
                    (f.bold, Modifier::BOLD),
                    (f.dim, Modifier::DIM),
                    (f.italic, Modifier::ITALIC),
                    (f.underlined, Modifier::UNDERLINED),
                    (f.reversed, Modifier::REVERSED),
                ] {
                    if on {
                        m |= flag;
                    }
                }
                Ok(st.add_modifier(m))
            }
        }
    }
}

impl Theme {
    /// Applies the keys of a theme file over `self`. Unknown keys are errors (a typo should not
    /// silently do nothing).
    fn patch(&mut self, name: &str, text: &str) -> Result<(), ThemeError> {
        let map: BTreeMap<String, StyleSpec> =
            toml::from_str(text).map_err(|source| ThemeError::Toml {
                name: name.to_owned(),
                source,
            })?;
        for (key, spec) in map {
            let style = spec.to_style().map_err(|msg| ThemeError::Key {
                name: name.to_owned(),
                key: key.clone(),
                msg,
            })?;
            let slot = self.slot(&key).ok_or_else(|| ThemeError::Key {
                name: name.to_owned(),
                key: key.clone(),
                msg: "unknown key".to_owned(),
            })?;
            *slot = style;
        }
        Ok(())
    }

    /// A built-in theme by name.
    pub fn builtin(name: &str) -> Option<Theme> {
        let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name)?;
        let mut t = Theme::blank(name);
        // Built-ins are part of the binary and covered by tests; a broken one is a build bug,
        // so fall back to the blank theme rather than fail at run time.
        t.patch(name, text).ok()?;
        Some(t)
    }

    /// The default theme (dark), or mono when `NO_COLOR` is set.
    pub fn default_for_env() -> Theme {
        let name = if no_color() { "mono" } else { DEFAULT_THEME };
        Theme::builtin(name).unwrap_or_else(|| Theme::blank(name))
    }

    /// Resolves `--theme NAME` (or the default): the built-in of that name (else the default
    /// theme), patched by `<config>/themes/NAME.toml` when it exists. `NAME` may also be a path
    /// to a `.toml` file. With `NO_COLOR` set and no explicit name, the mono theme.
    pub fn load(name: Option<&str>, config_dir: Option<&Path>) -> Result<Theme, ThemeError> {
        let name = match name {
            Some(n) => n.to_owned(),
            None if no_color() => "mono".to_owned(),
            None => DEFAULT_THEME.to_owned(),
        };
        let as_path = Path::new(&name);
        if as_path.extension().is_some_and(|e| e == "toml") && as_path.is_file() {
            let stem = as_path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| name.clone());
            let mut t = Theme::builtin(&stem)
                .or_else(|| Theme::builtin(DEFAULT_THEME))
                .unwrap_or_else(|| Theme::blank(&stem));
            t.name = stem.clone();
            let text = read(as_path)?;
            t.patch(&stem, &text)?;
            return Ok(t);
        }
        let user = config_dir.map(|d| d.join("themes").join(format!("{name}.toml")));
        let user = user.filter(|p| p.is_file());
        let mut theme = match (Theme::builtin(&name), &user) {
            (Some(t), _) => t,
            (None, Some(_)) => {
                let mut t = Theme::builtin(DEFAULT_THEME).unwrap_or_else(|| Theme::blank(&name));
                t.name = name.clone();
                t
            }
            (None, None) => {
                let dir = config_dir
                    .map(|d| d.join("themes").display().to_string())
                    .unwrap_or_else(|| "the config dir".to_owned());
                return Err(ThemeError::Unknown(name, dir));
            }
        };
        if let Some(p) = user {
            let text = read(&p)?;
            theme.patch(&name, &text)?;
        }
        Ok(theme)
    }

    /// The style of a heatmap cell at `tier`.
    pub fn tier(&self, tier: tierscope_engine::episode::model::Tier) -> Style {
        use tierscope_engine::episode::model::Tier;
        match tier {
            Tier::Full => self.tier_full,
            Tier::Dense => self.tier_dense,
            Tier::Compact => self.tier_compact,
            Tier::Anchor => self.tier_anchor,
            Tier::Dropped => self.tier_dropped,
        }
    }
}

fn read(p: &Path) -> Result<String, ThemeError> {
    std::fs::read_to_string(p).map_err(|source| ThemeError::Io {
        path: p.to_owned(),
        source,
    })
}

/// `NO_COLOR` set to a non-empty value (<https://no-color.org>).
pub fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// The user's config dir for tierscope: `$TIERSCOPE_CONFIG_DIR`, else `<XDG config>/tierscope`.
pub fn config_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("TIERSCOPE_CONFIG_DIR").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(d));
    }
    use etcetera::BaseStrategy;
    etcetera::choose_base_strategy()
        .ok()
        .map(|s| s.config_dir().join("tierscope"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full_key_set(text: &str) -> Vec<String> {
        let map: BTreeMap<String, toml::Value> = toml::from_str(text).unwrap_or_default();
        map.into_keys().collect()
    }

    #[test]
    fn every_builtin_parses_and_sets_every_key() {
        for (name, text) in BUILTIN {
            let t = Theme::builtin(name);
            assert!(t.is_some(), "built-in theme {name} does not parse");
            let mut keys = full_key_set(text);
            keys.sort();
            let mut want: Vec<String> = Theme::KEYS.iter().map(|s| s.to_string()).collect();
            want.sort();
            assert_eq!(keys, want, "theme {name} must set every key");
        }
    }

    #[test]
    fn mono_has_no_colours_and_visible_selection() {
        let t = Theme::builtin("mono").unwrap_or_else(|| Theme::blank("x"));
        for key in Theme::KEYS {
            let mut probe = t.clone();
            let st = *probe.slot(key).unwrap_or(&mut Style::default());
            for c in [st.fg, st.bg].into_iter().flatten() {
                assert_eq!(c, Color::Reset, "mono key {key} has a colour");
            }
        }
        assert!(t.selection.add_modifier.contains(Modifier::REVERSED));
        assert!(t.cursor.add_modifier.contains(Modifier::REVERSED));
    }

    #[test]
    fn user_file_patches_builtin_and_rejects_unknown_keys() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let themes = dir.path().join("themes");
        std::fs::create_dir_all(&themes).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            themes.join("light.toml"),
            "error = { fg = \"#ff0000\", bold = true }\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let t = Theme::load(Some("light"), Some(dir.path())).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.error.fg, Some(Color::Rgb(255, 0, 0)));
        let light = Theme::builtin("light").unwrap_or_else(|| Theme::blank("x"));
        assert_eq!(t.base, light.base);

        std::fs::write(themes.join("mine.toml"), "no_such_key = \"red\"\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let err = Theme::load(Some("mine"), Some(dir.path()));
        assert!(matches!(err, Err(ThemeError::Key { .. })));
        assert!(matches!(
            Theme::load(Some("nope"), Some(dir.path())),
            Err(ThemeError::Unknown(..))
        ));
    }
}
