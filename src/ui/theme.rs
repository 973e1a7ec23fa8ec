//! Colours and glyph sets: one place decides what colour (or none, for NO_COLOR) and which
//! characters (Unicode or `--ascii`) every region uses.

use ratatui::style::{Color, Modifier, Style};

/// The characters the chart and panels draw with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Glyphs {
    pub full: &'static str,
    pub full_drop: &'static str,
    /// Index = eighths filled (0 unused).
    pub partial: [&'static str; 9],
    pub dip: &'static str,
    pub drop_top: &'static str,
    /// Top of a column clipped by the robust y scale.
    pub clipped: &'static str,
    pub overlay: &'static str,
    pub avg: &'static str,
    pub axis_v: &'static str,
    pub axis_h: &'static str,
    pub axis_tick: &'static str,
    pub axis_origin: &'static str,
    pub empty_bar: &'static str,
    pub gauge_full: &'static str,
    pub ellipsis: &'static str,
    pub arrow: &'static str,
}

impl Glyphs {
    pub const UNICODE: Glyphs = Glyphs {
        full: "█",
        full_drop: "▓",
        partial: [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"],
        dip: "▒",
        drop_top: "▾",
        clipped: "▲",
        overlay: "•",
        avg: "╌",
        axis_v: "│",
        axis_h: "─",
        axis_tick: "┤",
        axis_origin: "┼",
        empty_bar: "░",
        gauge_full: "█",
        ellipsis: "…",
        arrow: "→",
    };
    pub const ASCII: Glyphs = Glyphs {
        full: "#",
        full_drop: "%",
        partial: [" ", ".", ".", ".", ":", ":", ":", "#", "#"],
        dip: ":",
        drop_top: "v",
        clipped: "^",
        overlay: "*",
        avg: "-",
        axis_v: "|",
        axis_h: "-",
        axis_tick: "+",
        axis_origin: "+",
        empty_bar: ".",
        gauge_full: "#",
        ellipsis: "...",
        arrow: "->",
    };
}

/// Colour on/off plus the glyph set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
    pub glyphs: Glyphs,
}

impl Theme {
    pub fn new(color: bool, ascii: bool) -> Self {
        Theme {
            color,
            glyphs: if ascii {
                Glyphs::ASCII
            } else {
                Glyphs::UNICODE
            },
        }
    }

    /// True when drawing with ASCII only (`--ascii`).
    pub fn ascii(&self) -> bool {
        self.glyphs == Glyphs::ASCII
    }

    /// Box-drawing border, or `+-|` with `--ascii`.
    pub fn border_set(&self) -> ratatui::symbols::border::Set<'static> {
        if self.ascii() {
            ratatui::symbols::border::Set {
                top_left: "+",
                top_right: "+",
                bottom_left: "+",
                bottom_right: "+",
                vertical_left: "|",
                vertical_right: "|",
                horizontal_top: "-",
                horizontal_bottom: "-",
            }
        } else {
            ratatui::symbols::border::PLAIN
        }
    }

    /// No colour; Unicode unless `ascii`.
    pub fn plain(ascii: bool) -> Self {
        Theme::new(false, ascii)
    }

    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }

    pub fn fill_color(&self) -> Color {
        Color::Green
    }
    pub fn fill(&self) -> Style {
        self.fg(Color::Green)
    }
    pub fn drop_fill(&self) -> Style {
        self.fg(Color::Yellow)
    }
    pub fn dip(&self) -> Style {
        self.fg(Color::Red)
    }
    pub fn drop_mark(&self) -> Style {
        self.fg(Color::Red)
    }
    pub fn overlay(&self) -> Style {
        self.fg(Color::Cyan)
    }
    pub fn avg(&self) -> Style {
        self.fg(Color::Gray)
    }
    pub fn dim(&self) -> Style {
        if self.color {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new()
        }
    }
    pub fn label(&self) -> Style {
        if self.color {
            Style::new().fg(Color::Gray)
        } else {
            Style::new()
        }
    }
    pub fn value(&self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }
    pub fn title(&self) -> Style {
        if self.color {
            Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::BOLD)
        }
    }
    pub fn warn(&self) -> Style {
        self.fg(Color::Yellow)
    }
    pub fn error(&self) -> Style {
        self.fg(Color::Red)
    }
    pub fn good(&self) -> Style {
        self.fg(Color::Green)
    }
    pub fn gauge(&self) -> Style {
        self.fg(Color::Blue)
    }
}
