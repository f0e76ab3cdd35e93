//! Ctrl-C. One process-wide SIGINT handler (the `ctrlc` crate) and a slot holding the cancel
//! handle of the statement now running.
//!
//! - A statement is running: cancel it (the engine stops every participant and answers
//!   `canceling statement due to user request`). A script then stops, as psql's does.
//! - Nothing is running: an interactive shell ignores it (at the prompt rustyline reads Ctrl-C
//!   as a key and clears the line, so the signal only arrives between statements); a script
//!   (which may be blocked reading a pipe) exits with status 130, as a shell pipeline would.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use weft_sql::CancelHandle;

static RUNNING: Mutex<Option<CancelHandle>> = Mutex::new(None);
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static INTERACTIVE: AtomicBool = AtomicBool::new(false);

/// Exit status of a script stopped by Ctrl-C between statements (128 + SIGINT).
const EXIT_INTERRUPTED: i32 = 130;

/// Install the handler once, at start-up. A failure (a handler already set) is reported and
/// otherwise ignored: Ctrl-C then kills the process, which is what it did anyway.
pub fn install() {
    let result = ctrlc::set_handler(|| {
        INTERRUPTED.store(true, Ordering::SeqCst);
        let slot = RUNNING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match slot.as_ref() {
            Some(handle) => handle.cancel(),
            None if !INTERACTIVE.load(Ordering::SeqCst) => std::process::exit(EXIT_INTERRUPTED),
            None => {}
        }
    });
    if let Err(e) = result {
        eprintln!("weft: warning: could not install the Ctrl-C handler: {e}");
    }
}

/// The interactive shell keeps running when Ctrl-C arrives between statements.
pub fn set_interactive(interactive: bool) {
    INTERACTIVE.store(interactive, Ordering::SeqCst);
}

/// Run `f` with `handle` as the target of Ctrl-C.
pub fn while_running<T>(handle: CancelHandle, f: impl FnOnce() -> T) -> T {
    *RUNNING.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(handle);
    let result = f();
    *RUNNING.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = None;
    result
}

/// Whether Ctrl-C was pressed since the last call; clears the flag.
pub fn take_interrupt() -> bool {
    INTERRUPTED.swap(false, Ordering::SeqCst)
}
