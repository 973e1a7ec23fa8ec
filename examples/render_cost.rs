//! Measures what one TUI frame costs to render (ratatui TestBackend, 120×40) from a real
//! recording: the CPU side of the §10 "TUI cost" target, without terminal I/O.
//! Usage: cargo run --release --example render_cost [RECORDING] [FRAMES]

use std::time::Instant;

use copyscope::frontend::replay::app_at;
use copyscope::model::ModelConfig;
use copyscope::present::units::Units;
use copyscope::report::recording::Recording;
use copyscope::ui::theme::Theme;
use copyscope::ui::view::UiOptions;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .unwrap_or_else(|| "assets/slowdev-40mbps-ext4.jsonl".into());
    let frames: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let rec = Recording::load(std::path::Path::new(&path)).expect("recording loads");
    let opts = UiOptions {
        theme: Theme::new(true, false),
        units: Units::Decimal,
        compact: false,
        then: None,
    };
    let app = app_at(&rec, ModelConfig::default(), opts, rec.duration_ns() / 2);
    let mut term = Terminal::new(TestBackend::new(120, 40)).expect("test backend");
    let t = Instant::now();
    for _ in 0..frames {
        term.draw(|f| copyscope::ui::render(f, &app.view()))
            .expect("draw");
    }
    let per = t.elapsed().as_secs_f64() / f64::from(frames);
    println!(
        "{frames} frames at 120x40: {:.3} ms per frame ({:.1} ms/s at 5 fps)",
        per * 1e3,
        per * 5e3
    );
}
