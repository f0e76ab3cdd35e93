//! Scripts: statement splitting, and running `-c` arguments, `-f` files and stdin.
//!
//! Statement splitting is done lexically as psql does it (psql never asks the server where a
//! statement ends).
//!
//! Input arrives a line at a time (the shell reads lines; files are split into lines so
//! errors can name one). The lexer keeps its state between lines:
//!
//! ```text
//!            '            "             $tag$          /*             --
//!  Normal ──────► Quote ─────► Ident ──────► Dollar ──────► Block(n) ──────► (rest of line)
//!         ◄──────       ◄─────       ◄──────        ◄────── (nested: n+1 / n-1)
//! ```
//!
//! A `;` in `Normal` state at parenthesis depth 0 ends a statement (psql does not split inside
//! parentheses either, for `CREATE RULE ... (a; b)`). Rules, as psql's `psqlscan.l` has them:
//!
//! 1. `'...'` with `''` for a quote; `E'...'` also honours backslash escapes.
//! 2. `"..."` with `""` for a quote.
//! 3. `$tag$ ... $tag$`, tag empty or an identifier not starting with a digit; a `$` right after
//!    an identifier character belongs to the identifier (`a$b`), and `$1` is a parameter.
//! 4. `--` to the end of the line; `/* ... */`, nested.
//! 5. Whitespace and `--` comments before a statement's first token are dropped; a statement
//!    with no token at all (`;;`, a lone comment) is skipped.
//! 6. A line whose first non-blank character is `\`, seen in `Normal` state, is a meta-command;
//!    it does not disturb a statement being collected.
//! 7. Text left without `;` at the end of the input is a statement too (`finish`).
//!
//! Not done: `BEGIN ATOMIC ... END` bodies (psql 15 tracks them to allow `;` inside),
//! meta-commands after a statement on the same line (`select 1 \g`).

use std::io::BufRead;

use crate::cancel;
use crate::runner::{Location, Outcome, Runner};

/// One thing to run, with the 1-based line it ended on (psql reports errors there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScriptItem {
    /// A statement without its terminating `;` (`terminated`: it had one, which psql sends
    /// with the text and shows in an error's `LINE n:` excerpt).
    Statement { sql: String, line: usize, terminated: bool },
    /// A backslash command, without the backslash: `timing on`, `d t`.
    Meta { command: String, line: usize },
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum LexState {
    Normal,
    /// Inside `'...'`; `backslash_escapes` for `E'...'`.
    Quote { backslash_escapes: bool },
    /// Inside `"..."`.
    Ident,
    /// Inside `$tag$...`; holds the whole delimiter, `$tag$`.
    Dollar(String),
    /// Inside `/* ... */` at the given nesting depth (>= 1).
    Block(u32),
}

/// The incremental splitter. Feed lines, collect `ScriptItem`s.
#[derive(Debug)]
pub struct Splitter {
    buffer: String,
    state: LexState,
    paren_depth: u32,
    /// The buffer holds at least one token that is neither whitespace nor a comment.
    has_token: bool,
}

impl Default for Splitter {
    fn default() -> Self {
        Splitter::new()
    }
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$' || !c.is_ascii()
}

impl Splitter {
    pub fn new() -> Splitter {
        Splitter { buffer: String::new(), state: LexState::Normal, paren_depth: 0, has_token: false }
    }

    /// True when no statement is being collected (the shell shows `weft=>`, not `weft->`).
    pub fn is_empty(&self) -> bool {
        self.buffer.trim().is_empty() && self.state == LexState::Normal
    }

    /// Forget a half-typed statement (Ctrl-C at the prompt).
    pub fn clear(&mut self) {
        *self = Splitter::new();
    }

    /// Feed one line (without its newline); complete items are appended to `out`.
    pub fn feed_line(&mut self, line: &str, line_number: usize, out: &mut Vec<ScriptItem>) {
        if self.state == LexState::Normal {
            if let Some(command) = line.trim_start().strip_prefix('\\') {
                out.push(ScriptItem::Meta { command: command.trim().to_string(), line: line_number });
                return;
            }
        }
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            i = self.step(&chars, i, line_number, out);
        }
        if !self.buffer.is_empty() {
            self.buffer.push('\n');
        }
    }

    /// End of input: a statement without `;` is still run.
    pub fn finish(&mut self, line_number: usize) -> Option<ScriptItem> {
        let item = self.take_statement(line_number, false);
        self.clear();
        item
    }

    fn take_statement(&mut self, line_number: usize, terminated: bool) -> Option<ScriptItem> {
        let sql = self.buffer.trim().to_string();
        let has_token = self.has_token;
        self.buffer.clear();
        self.has_token = false;
        self.paren_depth = 0;
        (has_token && !sql.is_empty()).then_some(ScriptItem::Statement { sql, line: line_number, terminated })
    }

    /// Consume the token starting at `chars[i]`; return the index after it.
    fn step(&mut self, chars: &[char], i: usize, line_number: usize, out: &mut Vec<ScriptItem>) -> usize {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match self.state.clone() {
            LexState::Quote { backslash_escapes } => {
                if backslash_escapes && c == '\\' && next.is_some() {
                    self.push_chars(&chars[i..i + 2]);
                    return i + 2;
                }
                if c == '\'' {
                    if next == Some('\'') {
                        self.push_chars(&chars[i..i + 2]);
                        return i + 2;
                    }
                    self.state = LexState::Normal;
                }
                self.buffer.push(c);
                i + 1
            }
            LexState::Ident => {
                if c == '"' {
                    if next == Some('"') {
                        self.push_chars(&chars[i..i + 2]);
                        return i + 2;
                    }
                    self.state = LexState::Normal;
                }
                self.buffer.push(c);
                i + 1
            }
            LexState::Dollar(delimiter) => {
                let delimiter_chars: Vec<char> = delimiter.chars().collect();
                if chars[i..].starts_with(&delimiter_chars) {
                    self.buffer.push_str(&delimiter);
                    self.state = LexState::Normal;
                    return i + delimiter_chars.len();
                }
                self.buffer.push(c);
                i + 1
            }
            LexState::Block(depth) => {
                if c == '*' && next == Some('/') {
                    self.state = if depth == 1 { LexState::Normal } else { LexState::Block(depth - 1) };
                    self.buffer.push_str("*/");
                    return i + 2;
                }
                if c == '/' && next == Some('*') {
                    self.state = LexState::Block(depth + 1);
                    self.buffer.push_str("/*");
                    return i + 2;
                }
                self.buffer.push(c);
                i + 1
            }
            LexState::Normal => self.step_normal(chars, i, line_number, out),
        }
    }

    fn step_normal(&mut self, chars: &[char], i: usize, line_number: usize, out: &mut Vec<ScriptItem>) -> usize {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let previous = if i > 0 { Some(chars[i - 1]) } else { None };
        match c {
            '-' if next == Some('-') => {
                // A line comment: kept inside a statement, dropped before one (rule 5).
                if self.has_token {
                    self.push_chars(&chars[i..]);
                }
                return chars.len();
            }
            '/' if next == Some('*') => {
                self.state = LexState::Block(1);
                self.buffer.push_str("/*");
                return i + 2;
            }
            ';' if self.paren_depth == 0 => {
                if let Some(item) = self.take_statement(line_number, true) {
                    out.push(item);
                }
                return i + 1;
            }
            c if c.is_whitespace() => {
                if self.has_token {
                    self.buffer.push(c);
                }
                return i + 1;
            }
            _ => {}
        }
        self.has_token = true;
        match c {
            '\'' => {
                let escapes = matches!(previous, Some('e' | 'E'))
                    && (i < 2 || !is_ident_char(chars[i - 2]));
                self.state = LexState::Quote { backslash_escapes: escapes };
            }
            '"' => self.state = LexState::Ident,
            '(' => self.paren_depth += 1,
            ')' => self.paren_depth = self.paren_depth.saturating_sub(1),
            '$' if !previous.is_some_and(is_ident_char) => {
                if let Some(delimiter) = dollar_delimiter(&chars[i..]) {
                    self.buffer.push_str(&delimiter);
                    let length = delimiter.chars().count();
                    self.state = LexState::Dollar(delimiter);
                    return i + length;
                }
            }
            _ => {}
        }
        self.buffer.push(c);
        i + 1
    }

    fn push_chars(&mut self, chars: &[char]) {
        self.buffer.extend(chars.iter());
    }
}

/// The `$tag$` opening at the start of `chars`, if there is one.
fn dollar_delimiter(chars: &[char]) -> Option<String> {
    debug_assert_eq!(chars.first(), Some(&'$'));
    let mut end = 1;
    while end < chars.len() && chars[end] != '$' {
        let c = chars[end];
        let allowed = if end == 1 { c.is_alphabetic() || c == '_' || !c.is_ascii() } else { is_ident_char(c) };
        if !allowed || c == '$' {
            return None;
        }
        end += 1;
    }
    (end < chars.len()).then(|| chars[..=end].iter().collect())
}

/// Split a whole text (a -c argument, a file, stdin). Lines are numbered from 1.
pub fn split_script(text: &str) -> Vec<ScriptItem> {
    let mut splitter = Splitter::new();
    let mut items = Vec::new();
    let mut last_line = 0;
    for (index, line) in text.lines().enumerate() {
        last_line = index + 1;
        splitter.feed_line(line, last_line, &mut items);
    }
    items.extend(splitter.finish(last_line.max(1)));
    items
}

/// How a run of input ended; `main` turns it into psql's exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScriptEnd {
    /// Ran to the end; `last_failed` tells whether the last item failed (psql's `-c` status).
    Finished { last_failed: bool },
    /// `\q`.
    Quit,
    /// Stopped by an error under `ON_ERROR_STOP`, or by Ctrl-C.
    Stopped,
}

/// A `-c` argument. psql sends it to the server as one query string, so an error ends the
/// whole argument; weft splits it (the engine takes one statement at a time) and does the same.
pub fn run_command(runner: &mut Runner, text: &str) -> ScriptEnd {
    for item in split_script(text) {
        match runner.run_item(&item, None) {
            Outcome::Ok => {}
            Outcome::Failed => return ScriptEnd::Finished { last_failed: true },
            Outcome::Quit => return ScriptEnd::Quit,
        }
        if cancel::take_interrupt() {
            return ScriptEnd::Stopped;
        }
    }
    ScriptEnd::Finished { last_failed: false }
}

/// A `-f` file (`-` is stdin). Errors are prefixed `weft:FILE:LINE: `.
pub fn run_file(runner: &mut Runner, path: &str) -> std::io::Result<ScriptEnd> {
    if path == "-" {
        return Ok(run_lines(runner, std::io::stdin().lock(), None));
    }
    let file = std::fs::File::open(path)?;
    Ok(run_lines(runner, std::io::BufReader::new(file), Some(path)))
}

/// Run SQL and meta-commands read line by line (a file, or stdin that is not a terminal).
/// Each statement runs as soon as its `;` has been read, so a pipe is served as it flows.
/// A `COPY ... FROM STDIN` reads its data from the lines that follow it.
pub fn run_lines(runner: &mut Runner, reader: impl BufRead, file: Option<&str>) -> ScriptEnd {
    let mut reader = LineCounter { inner: reader, lines: 0 };
    let mut splitter = Splitter::new();
    let mut items = Vec::new();
    let mut line = String::new();
    let mut line_number = 0;
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(error) => {
                runner.print_error(&format!("error: could not read input: {error}"), Location { file, line: reader.lines });
                return ScriptEnd::Stopped;
            }
        }
        // The line's number (the last one may have no line end).
        line_number = reader.lines + usize::from(!line.ends_with('\n'));
        let text = line.strip_suffix('\n').unwrap_or(&line);
        let text = text.strip_suffix('\r').unwrap_or(text);
        splitter.feed_line(text, line_number, &mut items);
        for item in std::mem::take(&mut items) {
            if let Some(end) = run_script_item(runner, &item, file, Some(&mut reader)) {
                return end;
            }
        }
    }
    if let Some(item) = splitter.finish(line_number.max(reader.lines).max(1)) {
        if let Some(end) = run_script_item(runner, &item, file, Some(&mut reader)) {
            return end;
        }
    }
    ScriptEnd::Finished { last_failed: false }
}

/// A script's input that counts the lines taken from it, by the script or a COPY's data.
struct LineCounter<R> {
    inner: R,
    lines: usize,
}

impl<R: BufRead> std::io::Read for LineCounter<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        crate::copy_client::read_through_buffer(self, buf)
    }
}

impl<R: BufRead> BufRead for LineCounter<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        if let Ok(buffer) = self.inner.fill_buf() {
            self.lines += buffer[..amount.min(buffer.len())].iter().filter(|&&b| b == b'\n').count();
        }
        self.inner.consume(amount);
    }
}

/// Run one item of a script; `Some` when the script must end here.
fn run_script_item(runner: &mut Runner, item: &ScriptItem, file: Option<&str>, input: Option<&mut dyn BufRead>) -> Option<ScriptEnd> {
    let outcome = runner.run_item_reading(item, file, input);
    if cancel::take_interrupt() {
        return Some(ScriptEnd::Stopped);
    }
    match outcome {
        Outcome::Ok => None,
        Outcome::Failed if runner.on_error_stop() => Some(ScriptEnd::Stopped),
        Outcome::Failed => None,
        Outcome::Quit => Some(ScriptEnd::Quit),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statements(text: &str) -> Vec<String> {
        split_script(text)
            .into_iter()
            .map(|item| match item {
                ScriptItem::Statement { sql, .. } => sql,
                ScriptItem::Meta { command, .. } => format!("\\{command}"),
            })
            .collect()
    }

    #[test]
    fn semicolons_split() {
        assert_eq!(statements("select 1; select 2;"), ["select 1", "select 2"]);
        assert_eq!(statements("select 1;\nselect\n  2"), ["select 1", "select\n  2"]);
    }

    #[test]
    fn empty_statements_are_skipped() {
        assert_eq!(statements(";; select 1;;\n;\n  "), ["select 1"]);
        assert_eq!(statements("-- only a comment\n;"), Vec::<String>::new());
        assert_eq!(statements("/* block */;"), Vec::<String>::new());
        assert!(statements("").is_empty());
    }

    #[test]
    fn quotes_hide_semicolons() {
        assert_eq!(statements("select 'a;b', 'it''s;'; select 2"), ["select 'a;b', 'it''s;'", "select 2"]);
        assert_eq!(statements("select \"a;\"\"b\" from t; x"), ["select \"a;\"\"b\" from t", "x"]);
        assert_eq!(statements("select E'it\\';s'; y"), ["select E'it\\';s'", "y"]);
        // Without E, a backslash is an ordinary character (standard_conforming_strings).
        assert_eq!(statements("select '\\'; z"), ["select '\\'", "z"]);
        assert_eq!(statements("select 'multi\nline;'; z"), ["select 'multi\nline;'", "z"]);
    }

    #[test]
    fn comments_hide_semicolons() {
        assert_eq!(statements("select 1 -- a; b\n+ 1; select 2"), ["select 1 -- a; b\n+ 1", "select 2"]);
        assert_eq!(statements("select /* ; /* nested ; */ still ; */ 1; x"), ["select /* ; /* nested ; */ still ; */ 1", "x"]);
        assert_eq!(statements("-- leading comment\nselect 1;"), ["select 1"]);
    }

    #[test]
    fn dollar_quotes_hide_semicolons() {
        let text = "do $$ begin perform 1; end $$; select $tag$ a;$$; $tag$; select 3";
        assert_eq!(statements(text), ["do $$ begin perform 1; end $$", "select $tag$ a;$$; $tag$", "select 3"]);
        // `$1` is a parameter and `a$b` an identifier, neither opens a quote.
        assert_eq!(statements("select $1; select a$b$ ; c"), ["select $1", "select a$b$", "c"]);
        assert_eq!(statements("select $f$\nx;\n$f$;"), ["select $f$\nx;\n$f$"]);
    }

    #[test]
    fn parentheses_hide_semicolons() {
        assert_eq!(statements("create rule r as on insert to t do (select 1; select 2); x"), [
            "create rule r as on insert to t do (select 1; select 2)",
            "x"
        ]);
    }

    #[test]
    fn meta_commands_at_line_start() {
        let items = split_script("\\timing on\nselect 1;\n  \\d t\nselect\n\\q\n2;");
        assert_eq!(items, [
            ScriptItem::Meta { command: "timing on".into(), line: 1 },
            ScriptItem::Statement { sql: "select 1".into(), line: 2, terminated: true },
            ScriptItem::Meta { command: "d t".into(), line: 3 },
            ScriptItem::Meta { command: "q".into(), line: 5 },
            ScriptItem::Statement { sql: "select\n2".into(), line: 6, terminated: true },
        ]);
        // Inside a quote a backslash line is data.
        assert_eq!(statements("select '\n\\q\n';"), ["select '\n\\q\n'"]);
    }

    #[test]
    fn statements_carry_their_last_line() {
        let items = split_script("select\n1;\n\nselect 2");
        assert_eq!(items, [
            ScriptItem::Statement { sql: "select\n1".into(), line: 2, terminated: true },
            ScriptItem::Statement { sql: "select 2".into(), line: 4, terminated: false },
        ]);
    }

    #[test]
    fn splitter_reports_continuation() {
        let mut splitter = Splitter::new();
        let mut out = Vec::new();
        assert!(splitter.is_empty());
        splitter.feed_line("select 'a", 1, &mut out);
        assert!(!splitter.is_empty());
        splitter.feed_line("';", 2, &mut out);
        assert!(splitter.is_empty());
        assert_eq!(out, [ScriptItem::Statement { sql: "select 'a\n'".into(), line: 2, terminated: true }]);
    }
}
