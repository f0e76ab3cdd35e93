//! The interactive shell: rustyline line editing, history in `~/.weft_history`, prompts
//! `weft=> ` (new statement) and `weft-> ` (continuation), with psql's `*` inside a transaction
//! block and `!` inside a failed one, statements run when their `;` is
//! typed, backslash commands at the start of a line.
//!
//! Ctrl-C at the prompt (read by rustyline as a key, the terminal being in raw mode) throws
//! away the line and any half-typed statement, as psql does; while a statement runs the
//! terminal is back in cooked mode, SIGINT reaches `cancel`'s handler and the statement is
//! cancelled. Ctrl-D on an empty line quits.

use std::path::PathBuf;

use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;

use crate::cancel;
use crate::runner::{Outcome, Runner};
use crate::script::Splitter;

/// psql's prompts: `=>` for a new statement, `=*>` inside a transaction block, `=!>` inside
/// a failed one; `->` (and `-*>`, `-!>`) for a continuation line.
fn prompt(runner: &Runner, continuation: bool) -> &'static str {
    let failed = runner.session.in_failed_transaction_block();
    match (continuation, failed, runner.session.in_transaction_block()) {
        (false, true, _) => "weft=!> ",
        (false, false, true) => "weft=*> ",
        (false, false, false) => "weft=> ",
        (true, true, _) => "weft-!> ",
        (true, false, true) => "weft-*> ",
        (true, false, false) => "weft-> ",
    }
}
const HISTORY_FILE_NAME: &str = ".weft_history";
/// History entries kept across sessions.
const HISTORY_ENTRIES_MAX: usize = 1000;

/// Run the shell until `\q` or end of input.
pub fn run(runner: &mut Runner, data_dir: &str) -> Result<(), String> {
    cancel::set_interactive(true);
    runner.interactive = true;
    let config = rustyline::Config::builder()
        .max_history_size(HISTORY_ENTRIES_MAX)
        .map_err(|e| format!("could not configure line editing: {e}"))?
        .auto_add_history(false)
        .build();
    let mut editor = DefaultEditor::with_config(config).map_err(|e| format!("could not start line editing: {e}"))?;
    let history = history_path();
    if let Some(path) = &history {
        // A missing history file is the normal first run.
        let _ = editor.load_history(path);
    }
    outln!("weft {} (data directory \"{data_dir}\")", env!("CARGO_PKG_VERSION"));
    outln!("Type \"\\?\" for help.\n");

    let mut splitter = Splitter::new();
    let mut items = Vec::new();
    let mut line_number = 0;
    'lines: loop {
        let line = match editor.readline(prompt(runner, !splitter.is_empty())) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                splitter.clear();
                continue;
            }
            Err(ReadlineError::Eof) => {
                outln!("\\q");
                break;
            }
            Err(error) => {
                eprintln!("weft: error: could not read input: {error}");
                break;
            }
        };
        if !line.trim().is_empty() {
            let _ = editor.add_history_entry(line.as_str());
        }
        line_number += 1;
        splitter.feed_line(&line, line_number, &mut items);
        for item in items.drain(..) {
            let outcome = runner.run_item(&item, None);
            cancel::take_interrupt();
            if outcome == Outcome::Quit {
                break 'lines;
            }
        }
    }
    if let Some(path) = &history {
        if let Err(error) = editor.save_history(path) {
            eprintln!("weft: warning: could not save history to {}: {error}", path.display());
        }
    }
    Ok(())
}

/// `~/.weft_history`, or nothing when there is no home directory.
fn history_path() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").filter(|home| !home.is_empty())?;
    Some(PathBuf::from(home).join(HISTORY_FILE_NAME))
}
