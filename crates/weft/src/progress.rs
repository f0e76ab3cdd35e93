//! A progress bar on stderr for long maintenance statements (CREATE INDEX, REINDEX), with
//! PostgreSQL's phase names and blocks or tuples done out of total, drawn only when stderr
//! is a terminal and the statement has run for `SHOW_AFTER`. The state comes from the
//! session's `ProgressHandle`, polled from a thread while the statement runs on the
//! caller's; the bar is cleared before the statement's result is printed. One line, the bar
//! taking the width the text leaves:
//!
//! ```text
//! building index: scanning table [=========>          ] 5888/12049 blocks, index "i"
//! building index: loading tuples in tree [===>        ] 947200/2000001 tuples, index "i"
//! ```

use std::io::IsTerminal;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use weft_common::progress::{CreateIndexPhase, ProgressSnapshot};
use weft_sql::ProgressHandle;

/// Statements shorter than this never show a bar.
const SHOW_AFTER: Duration = Duration::from_millis(500);
const POLL_EVERY: Duration = Duration::from_millis(100);

/// Run `f` (the statement) while a thread draws its progress.
///
/// The drawing thread waits on a channel, not in plain sleeps: when `f` returns it is woken
/// at once, so a short statement does not wait for the next poll (which `\timing` would
/// count).
pub fn while_running<T>(handle: ProgressHandle, f: impl FnOnce() -> T) -> T {
    if !std::io::stderr().is_terminal() {
        return f();
    }
    let (done, finished) = mpsc::channel::<()>();
    let drawer = std::thread::Builder::new()
        .name("weft-progress".into())
        .spawn(move || draw_until(&handle, &finished));
    let result = f();
    // Dropping the sender wakes the drawer, which clears its bar and returns.
    drop(done);
    if let Ok(drawer) = drawer {
        let _ = drawer.join();
    }
    result
}

/// The bar's length, position and unit for a snapshot.
fn bar_state(p: &ProgressSnapshot) -> (u64, u64, &'static str) {
    match p.phase {
        CreateIndexPhase::ScanningTable => (p.blocks_total, p.blocks_done, "blocks"),
        _ => (p.tuples_total, p.tuples_done, "tuples"),
    }
}

/// Poll `handle` until `finished` disconnects; draw a bar once the statement has run for
/// `SHOW_AFTER` with progress to show.
fn draw_until(handle: &ProgressHandle, finished: &mpsc::Receiver<()>) {
    let started = Instant::now();
    let mut bar: Option<ProgressBar> = None;
    // What the bar's text shows now: (phase, unit, index).
    let mut shown: Option<(CreateIndexPhase, &'static str, String)> = None;
    let mut attached = false;
    loop {
        let wait = if bar.is_some() { POLL_EVERY } else { SHOW_AFTER.saturating_sub(started.elapsed()).max(POLL_EVERY) };
        match finished.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
        }
        let Some(snapshot) = handle.current() else { continue };
        if started.elapsed() < SHOW_AFTER {
            continue;
        }
        let (total, position, unit) = bar_state(&snapshot);
        let bar = bar.get_or_insert_with(|| {
            let bar = ProgressBar::hidden();
            bar.set_style(
                ProgressStyle::with_template("{msg} [{wide_bar}] {pos}/{len} {prefix}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            bar
        });
        let text = (snapshot.phase, unit, snapshot.index.clone());
        if shown.as_ref() != Some(&text) {
            bar.set_message(snapshot.phase.name());
            bar.set_prefix(format!("{unit}, index \"{}\"", snapshot.index));
            shown = Some(text);
        }
        // Position and length in one update: one redraw, never a mix of old and new.
        bar.update(|state| {
            state.set_len(total.max(position));
            state.set_pos(position);
        });
        if !attached {
            // Configured while hidden, so that the first frame drawn is complete.
            bar.set_draw_target(ProgressDrawTarget::stderr());
            attached = true;
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scanning_counts_blocks_and_loading_counts_tuples() {
        let p = weft_common::progress::IndexBuildProgress::new("CREATE INDEX", "i", "t");
        p.set_phase(CreateIndexPhase::ScanningTable, 10, 0);
        p.add_blocks_done(3);
        assert_eq!(bar_state(&p.snapshot()), (10, 3, "blocks"));
        p.set_phase(CreateIndexPhase::LoadingTuplesInTree, 0, 50);
        p.add_tuples_done(20);
        assert_eq!(bar_state(&p.snapshot()), (50, 20, "tuples"));
    }
}
