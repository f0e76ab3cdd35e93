//! A progress bar on stderr for long maintenance statements (CREATE INDEX, REINDEX), with
//! PostgreSQL's phase names and blocks or tuples done out of total, drawn only when stderr
//! is a terminal and the statement has run for a moment. The state comes from the
//! session's `ProgressHandle`, polled from a thread while the statement runs.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use weft_common::progress::{CreateIndexPhase, ProgressSnapshot};
use weft_sql::ProgressHandle;

/// Statements shorter than this never show a bar.
const SHOW_AFTER: Duration = Duration::from_millis(500);
const POLL_EVERY: Duration = Duration::from_millis(100);

/// Run `f` (the statement) while a thread draws its progress.
pub fn while_running<T>(handle: ProgressHandle, f: impl FnOnce() -> T) -> T {
    if !std::io::stderr().is_terminal() {
        return f();
    }
    let done = Arc::new(AtomicBool::new(false));
    let drawer = {
        let done = done.clone();
        std::thread::spawn(move || draw_until(&handle, &done))
    };
    let result = f();
    done.store(true, Ordering::Release);
    let _ = drawer.join();
    result
}

/// The bar's length, position and unit for a snapshot.
fn bar_state(p: &ProgressSnapshot) -> (u64, u64, &'static str) {
    match p.phase {
        CreateIndexPhase::ScanningTable => (p.blocks_total, p.blocks_done, "blocks"),
        _ => (p.tuples_total, p.tuples_done, "tuples"),
    }
}

fn draw_until(handle: &ProgressHandle, done: &AtomicBool) {
    let started = Instant::now();
    let mut bar: Option<ProgressBar> = None;
    while !done.load(Ordering::Acquire) {
        std::thread::sleep(POLL_EVERY);
        let Some(snapshot) = handle.current() else { continue };
        if started.elapsed() < SHOW_AFTER {
            continue;
        }
        let bar = bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{prefix} {msg} [{bar:30}] {pos}/{len} {elapsed}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            bar.set_prefix(format!("{} \"{}\" on \"{}\":", snapshot.command, snapshot.index, snapshot.table));
            bar
        });
        let (total, position, unit) = bar_state(&snapshot);
        bar.set_message(format!("{} ({unit})", snapshot.phase.name()));
        bar.set_length(total.max(position));
        bar.set_position(position);
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
