//! Runs statements and meta-commands against one session and prints what psql would print:
//! results to stdout, notices and errors to stderr (with a `weft:FILE:LINE: ` prefix when the
//! input is a file, as psql prefixes `psql:FILE:LINE: `), and `Time: ...` under `\timing`.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::time::Instant;

use weft_sql::{QueryResult, Session};

use crate::cancel;
use crate::copy_client::{CopyOut, ShellCopy};
use crate::meta;
use crate::output::{format_notice, format_result, format_timing, OutputOptions};
use crate::script::ScriptItem;

/// Where an item came from, for message prefixes.
#[derive(Clone, Copy, Debug)]
pub struct Location<'a> {
    /// The `-f` file name; `None` for `-c`, stdin and the shell (psql prints no prefix there).
    pub file: Option<&'a str>,
    pub line: usize,
}

impl Location<'_> {
    pub const NONE: Location<'static> = Location { file: None, line: 0 };

    pub fn prefix(&self) -> String {
        match self.file {
            Some(file) => format!("weft:{file}:{}: ", self.line),
            None => String::new(),
        }
    }
}

/// How an item ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Failed,
    /// `\q`.
    Quit,
}

/// A session plus the shell's own state (output options, `\timing`, `\set` variables).
pub struct Runner {
    pub session: Session,
    pub output: OutputOptions,
    pub timing: bool,
    /// psql variables (`-v NAME=VALUE`, `\set`); `ON_ERROR_STOP` is the one that matters.
    pub variables: BTreeMap<String, String>,
    /// The interactive shell (psql's `cur_cmd_interactive`): some messages carry a hint there.
    pub interactive: bool,
}

impl Runner {
    pub fn new(session: Session, output: OutputOptions) -> Runner {
        Runner { session, output, timing: false, variables: BTreeMap::new(), interactive: false }
    }

    /// psql's boolean reading of `ON_ERROR_STOP` (`1`, `on`, `true`, `yes`).
    pub fn on_error_stop(&self) -> bool {
        self.variables.get("ON_ERROR_STOP").is_some_and(|value| parse_bool(value).unwrap_or(false))
    }

    /// Run one statement or meta-command; a `COPY ... FROM STDIN` reads its data from stdin.
    pub fn run_item(&mut self, item: &ScriptItem, file: Option<&str>) -> Outcome {
        self.run_item_reading(item, file, None)
    }

    /// [`Runner::run_item`] of an item of `input` (a script): a `COPY ... FROM STDIN` reads
    /// the lines after it.
    pub fn run_item_reading(&mut self, item: &ScriptItem, file: Option<&str>, input: Option<&mut dyn BufRead>) -> Outcome {
        match item {
            ScriptItem::Statement { sql, line, terminated } => {
                let mut copy = ShellCopy::new(input, CopyOut::Stdout);
                self.execute_terminated(sql, *terminated, Location { file, line: *line }, &mut copy)
            }
            ScriptItem::Meta { command, line } => meta::run(self, command, Location { file, line: *line }, input),
        }
    }

    /// Run one SQL statement and print its result, notices, error and timing.
    pub fn execute(&mut self, sql: &str, location: Location<'_>) -> Outcome {
        self.execute_terminated(sql, false, location, &mut ShellCopy::new(None, CopyOut::Stdout))
    }

    /// [`Runner::execute`] of a statement that ended with a `;` (`terminated`), which psql
    /// sends with the text: an error's excerpt shows it. `copy` moves a COPY's data.
    pub fn execute_terminated(&mut self, sql: &str, terminated: bool, location: Location<'_>, copy: &mut ShellCopy<'_>) -> Outcome {
        let handle = self.session.cancel_handle();
        let progress = self.session.progress_handle();
        let session = &mut self.session;
        // Sent as psql sends it, with its `;`: a syntax error there is "at or near ";"".
        let sent = if terminated { format!("{sql};") } else { sql.to_string() };
        let started = Instant::now();
        let result = cancel::while_running(handle, || {
            crate::progress::while_running(progress, || session.execute_with_copy(&sent, &mut *copy).and_then(|r| copy.finish().map(|()| r)))
        });
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        // psql reports a COPY FROM STDIN at the line its data ended on.
        let location = Location { line: location.line + copy.skip_rest(), ..location };
        let outcome = match result {
            Ok(mut result) => {
                if copy.copied_out {
                    // psql prints the rows of COPY TO STDOUT and no tag.
                    result.tag.clear();
                }
                self.print_result(&result, location);
                Outcome::Ok
            }
            Err(error) => {
                self.print_error(&error.to_psql_string_for(&sent), location);
                Outcome::Failed
            }
        };
        if self.timing {
            self.print_stdout(&format!("{}\n", format_timing(elapsed_ms)));
        }
        outcome
    }

    fn print_result(&self, result: &QueryResult, location: Location<'_>) {
        for notice in &result.notices {
            eprintln!("{}{}", location.prefix(), format_notice(notice));
        }
        self.print_stdout(&format_result(result, &self.output));
    }

    /// Print an error (psql's `ERROR:  ...` text, maybe several lines) to stderr; only the
    /// first line gets the location prefix, as in psql.
    pub fn print_error(&self, text: &str, location: Location<'_>) {
        let _ = std::io::stdout().flush();
        eprintln!("{}{}", location.prefix(), text);
    }

    pub fn print_stdout(&self, text: &str) {
        let mut stdout = std::io::stdout().lock();
        // A closed pipe (`weft ... | head`) is not worth a panic.
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
    }
}

/// psql's `ParseVariableBool`: a prefix of true/false/yes/no/on/off (on/off need two
/// letters), or 1/0.
pub fn parse_bool(value: &str) -> Option<bool> {
    let lower = value.trim().to_ascii_lowercase();
    let prefix_of = |word: &str, min: usize| lower.len() >= min && word.starts_with(lower.as_str());
    if lower.is_empty() {
        return None;
    }
    if prefix_of("true", 1) || prefix_of("yes", 1) || prefix_of("on", 2) || lower == "1" {
        Some(true)
    } else if prefix_of("false", 1) || prefix_of("no", 1) || prefix_of("off", 2) || lower == "0" {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::parse_bool;

    #[test]
    fn booleans_as_psql_reads_them() {
        for yes in ["1", "on", "ON", "true", "t", "yes", "y"] {
            assert_eq!(parse_bool(yes), Some(true), "{yes}");
        }
        for no in ["0", "off", "of", "false", "f", "no", "n"] {
            assert_eq!(parse_bool(no), Some(false), "{no}");
        }
        assert_eq!(parse_bool("o"), None);
        assert_eq!(parse_bool("maybe"), None);
    }
}
