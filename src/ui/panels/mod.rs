//! The text regions around the chart, one file each: title, speeds row, progress, events,
//! kernel panel (with its budget rows), a watch's writers or pipeline stages, footer, and the fallback for tiny terminals; `fit`
//! is the cell arithmetic they share.

mod budget;
mod events;
mod fit;
mod footer;
mod kernel;
mod progress;
mod speeds;
mod stages;
mod tiny;
mod title;
mod writers;

pub use events::events;
pub use fit::{cells, ellipsize_end, ellipsize_start, fit_line, render_fitted};
pub use footer::{footer_line, status_fits_footer, status_message};
pub use kernel::{kernel, kernel_lines};
pub use progress::{eta_secs, fraction_done, progress};
pub use speeds::speeds;
pub use stages::{pipeline_of, stage_rows, stages};
pub use tiny::tiny;
pub use title::title_line;
pub use writers::{MAX_WRITER_ROWS, has_writers, writers};
