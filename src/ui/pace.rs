//! Pacing a frame over a slow link: when the chart's time axis rescales, every column moves
//! and a frame would rewrite the whole plot at once (16 KB in one second at 200x60 over SSH).
//! [`Pacer::pace`] lets the rows that changed a lot through a few at a time, the ones held
//! back longest first, then top to bottom, and keeps the others as they are on the screen
//! until a later frame: a rescale (of either axis) or the events panel scrolling arrives as a
//! wipe over a second or so instead of a burst. Rows with a small change (figures, the newest
//! chart column, a progress bar) always go.

use ratatui::buffer::{Buffer, Cell};

/// A row whose change costs at most this many bytes is never held back (a figure, the
/// newest chart column, a progress bar).
pub const SMALL_ROW_BYTES: usize = 120;

/// Bytes a frame may spend (estimated as [`row_cost`] does): 900 bytes a frame at 5 frames a
/// second keeps a rescale under ~4.5 KB a second on top of the steady ~2 KB/s.
pub const BYTES_PER_FRAME: usize = 900;

/// What sending row `y`'s changes costs on the wire, estimated the way a terminal backend
/// writes them: each changed cell's text, a cursor move (~8 bytes) where the changed cells
/// are not contiguous, and a colour/attribute change (~12 bytes) where the style differs
/// from the cell sent before.
pub fn row_cost(next: &Buffer, shown: &Buffer, y: u16) -> usize {
    let area = next.area;
    let mut bytes = 0;
    let mut last_x: Option<u16> = None;
    let mut last_style: Option<&Cell> = None;
    for x in area.left()..area.right() {
        let c = &next[(x, y)];
        if *c == shown[(x, y)] {
            continue;
        }
        bytes += c.symbol().len();
        if last_x.is_none_or(|l| l + 1 != x) {
            bytes += 8;
        }
        if last_style.is_none_or(|p| p.fg != c.fg || p.bg != c.bg || p.modifier != c.modifier) {
            bytes += 12;
        }
        last_x = Some(x);
        last_style = Some(c);
    }
    bytes
}

/// Which rows were held back, and for how many frames, between one frame and the next.
#[derive(Debug, Default)]
pub struct Pacer {
    /// Frames each row of the screen has waited (0: shown as drawn).
    waited: Vec<u32>,
}

impl Pacer {
    /// Holds back rows of `next` (the frame about to be sent) that differ from `shown` (what
    /// the terminal shows) once `budget` bytes were spent. Small rows ([`SMALL_ROW_BYTES`])
    /// always go, and count; big rows go in order of the frames they have waited, then top to
    /// bottom, and the first one always goes, so every frame makes progress. Both matter while
    /// the chart rescales in every frame: top to bottom alone held the kernel panel's rows
    /// below it back for as long as the rescale lasted (at 160x60 its figures read "n/a" for
    /// the whole copy), and at 200x60 the small changes alone (the newest column of every
    /// chart row) spent the budget, so no big row went at all. Held-back rows are restored
    /// from `shown`, so the terminal library sends nothing for them. Returns true when a row
    /// was held back (draw again soon).
    pub fn pace(&mut self, next: &mut Buffer, shown: &Buffer, budget: usize) -> bool {
        let area = next.area;
        let rows = usize::from(area.height);
        if area != shown.area {
            self.waited.clear();
            return false;
        }
        self.waited.resize(rows, 0);
        let costs: Vec<usize> = (area.top()..area.bottom())
            .map(|y| row_cost(next, shown, y))
            .collect();
        let mut spent: usize = costs.iter().filter(|c| **c <= SMALL_ROW_BYTES).sum();
        let mut big: Vec<usize> = (0..rows).filter(|&i| costs[i] > SMALL_ROW_BYTES).collect();
        big.sort_by_key(|&i| (std::cmp::Reverse(self.waited[i]), i));
        for i in (0..rows).filter(|&i| costs[i] <= SMALL_ROW_BYTES) {
            self.waited[i] = 0;
        }
        let mut sent_big = false;
        let mut held = false;
        for i in big {
            if spent + costs[i] <= budget || !sent_big {
                spent += costs[i];
                sent_big = true;
                self.waited[i] = 0;
                continue;
            }
            let y = area.top() + i as u16;
            for x in area.left()..area.right() {
                next[(x, y)] = shown[(x, y)].clone();
            }
            self.waited[i] += 1;
            held = true;
        }
        held
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::layout::Rect;

    fn filled(w: u16, h: u16, c: &str) -> Buffer {
        let mut b = Buffer::empty(Rect::new(0, 0, w, h));
        for y in 0..h {
            for x in 0..w {
                b[(x, y)].set_symbol(c);
            }
        }
        b
    }

    #[test]
    fn a_full_rewrite_goes_a_few_rows_at_a_time_top_to_bottom() {
        let shown = filled(200, 10, "a");
        let want = filled(200, 10, "b");
        let mut screen = shown.clone();
        let mut frames = 0;
        let mut pacer = Pacer::default();
        loop {
            let mut next = want.clone();
            let held = pacer.pace(&mut next, &screen, 700);
            frames += 1;
            // Each frame: whole rows, the top ones first; a row of 200 changed cells costs
            // 220 bytes (200 + a move + a style), so at most 3 a frame.
            let sent: Vec<u16> = (0..10)
                .filter(|&y| next[(0, y)] != screen[(0, y)])
                .collect();
            assert!(
                sent.len() <= 3 && !sent.is_empty(),
                "frame {frames}: {sent:?}"
            );
            assert!(
                sent.windows(2).all(|w| w[1] == w[0] + 1),
                "contiguous: {sent:?}"
            );
            screen = next;
            if !held {
                break;
            }
        }
        assert_eq!(frames, 4);
        assert_eq!(screen, want);
    }

    #[test]
    fn small_changes_always_go_and_a_big_row_always_makes_progress() {
        let shown = filled(200, 3, " ");
        let mut next = shown.clone();
        // Row 0: a figure changed (6 cells); rows 1 and 2: 200 cells each.
        for x in 0..6 {
            next[(x, 0)].set_symbol("9");
        }
        for y in 1..3 {
            for x in 0..200 {
                next[(x, y)].set_symbol("#");
            }
        }
        let before = next.clone();
        assert!(Pacer::default().pace(&mut next, &shown, 150));
        assert_eq!(next[(0, 0)].symbol(), "9", "the small change went");
        assert_eq!(
            next[(0, 1)].symbol(),
            "#",
            "the first big row went over the budget"
        );
        assert_eq!(next[(0, 2)].symbol(), " ", "the second waits");
        // A resized screen is never paced.
        let mut other = filled(10, 3, "x");
        assert!(!Pacer::default().pace(&mut other, &shown, 100));
        assert_ne!(before, shown);
    }

    /// The small changes alone may spend the budget (at 200x60 the newest column of forty
    /// chart rows): one big row still goes in every frame.
    #[test]
    fn one_big_row_goes_even_when_small_changes_spent_the_budget() {
        let shown = filled(200, 41, " ");
        let mut next = shown.clone();
        for y in 0..40 {
            next[(199, y)].set_symbol("#");
        }
        for x in 0..200 {
            next[(x, 40)].set_symbol("k");
        }
        let mut pacer = Pacer::default();
        assert!(!pacer.pace(&mut next, &shown, 300));
        assert_eq!(next[(0, 40)].symbol(), "k");
    }

    /// A chart that rescales in every frame (its rows all change, again and again) must not
    /// starve the rows below it: the kernel panel's line, changed once, reaches the screen
    /// within a few frames. Top to bottom alone never sent it.
    #[test]
    fn rows_held_back_go_first_so_a_rescaling_chart_cannot_starve_the_rows_below() {
        let mut screen = filled(200, 10, "a");
        let mut pacer = Pacer::default();
        for frame in 1..=12u16 {
            // Rows 0..9: the chart, different in every frame; row 9: the kernel line.
            let mut next = filled(200, 10, if frame % 2 == 0 { "c" } else { "b" });
            for x in 0..200 {
                next[(x, 9)].set_symbol("k");
            }
            pacer.pace(&mut next, &screen, 700);
            screen = next;
            if screen[(0, 9)].symbol() == "k" {
                assert!(frame <= 4, "the kernel row waited {frame} frames");
                return;
            }
        }
        panic!("the kernel row never reached the screen");
    }
}
