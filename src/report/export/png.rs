//! PNG export: rasterises the very SVG that [`super::render_svg`] produces with
//! resvg/tiny-skia, using fonts embedded in the binary (DejaVu Sans) so it renders the
//! same on a headless server with no fonts installed. The system font directories are
//! never read.

use std::sync::{Arc, OnceLock};

use resvg::{tiny_skia, usvg};

use super::ChartData;

/// The family name of the embedded font, as the SVG names it first.
pub const FONT_FAMILY: &str = "DejaVu Sans";

/// Errors rasterising the chart.
#[derive(Debug, thiserror::Error)]
pub enum PngError {
    #[error("the chart SVG did not parse: {0}")]
    Svg(#[from] usvg::Error),
    #[error("cannot make a {0}×{1} picture")]
    Size(u32, u32),
    #[error("PNG encoding failed: {0}")]
    Encode(String),
}

/// The font database: only the embedded DejaVu faces (regular, bold, mono).
pub(super) fn fonts() -> Arc<usvg::fontdb::Database> {
    static DB: OnceLock<Arc<usvg::fontdb::Database>> = OnceLock::new();
    DB.get_or_init(|| {
        let mut db = usvg::fontdb::Database::new();
        db.load_font_data(dejavu::sans::regular().to_vec());
        db.load_font_data(dejavu::sans::bold().to_vec());
        db.load_font_data(dejavu::sans_mono::regular().to_vec());
        db.set_sans_serif_family(FONT_FAMILY);
        db.set_monospace_family("DejaVu Sans Mono");
        Arc::new(db)
    })
    .clone()
}

/// Renders the chart as a PNG of `width`×`height` pixels.
pub fn render_png(data: &ChartData, width: u32, height: u32) -> Result<Vec<u8>, PngError> {
    rasterize(&super::render_svg(data, width, height), width, height)
}

/// Rasterises SVG text to a PNG of `width`×`height`, scaling the drawing to fit.
pub fn rasterize(svg: &str, width: u32, height: u32) -> Result<Vec<u8>, PngError> {
    let opt = usvg::Options {
        font_family: FONT_FAMILY.to_string(),
        fontdb: fonts(),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &opt)?;
    let mut pixmap = tiny_skia::Pixmap::new(width, height).ok_or(PngError::Size(width, height))?;
    let size = tree.size();
    let transform = tiny_skia::Transform::from_scale(
        width as f32 / size.width(),
        height as f32 / size.height(),
    );
    resvg::render(&tree, transform, &mut pixmap.as_mut());
    pixmap
        .encode_png()
        .map_err(|e| PngError::Encode(e.to_string()))
}
