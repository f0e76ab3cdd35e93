//! The shell's end of `COPY ... FROM STDIN` / `TO STDOUT`, and psql's `\copy`.
//!
//! As in psql, the data of `COPY ... FROM STDIN` is the lines that follow the statement in
//! the input it came from (a `-f` file, piped stdin, the terminal), up to a line `\.` or the
//! end of the input; rows of `COPY ... TO STDOUT` go to stdout, without a command tag.
//! `\copy` runs the same statements with a file of the client's instead (weft's shell and
//! its database share a machine, so only the error messages differ from `COPY 'file'`).

use std::fs::File;
use std::io::{BufRead, BufWriter, IsTerminal, Read, StdinLock, Write};

use weft_sql::{CopyClient, Error, Result};

/// Reads the data lines of one `COPY ... FROM STDIN` from the input, a line at a time so
/// that nothing after the `\.` line is taken from the script.
pub struct DataLines<'a> {
    /// The script's input; `None`: the process's stdin, locked on first use.
    input: Option<&'a mut dyn BufRead>,
    stdin: Option<StdinLock<'static>>,
    line: Vec<u8>,
    at: usize,
    ended: bool,
    /// Lines taken from the input, the `\.` included.
    lines: usize,
    /// A COPY started reading.
    started: bool,
}

impl<'a> DataLines<'a> {
    pub fn new(input: Option<&'a mut dyn BufRead>) -> DataLines<'a> {
        DataLines { input, stdin: None, line: Vec::new(), at: 0, ended: false, lines: 0, started: false }
    }

    fn source(&mut self) -> &mut dyn BufRead {
        match &mut self.input {
            Some(input) => &mut **input,
            None => self.stdin.get_or_insert_with(|| std::io::stdin().lock()),
        }
    }

    /// Reading from the terminal: psql's instructions first.
    fn greet(&self) {
        if self.input.is_none() && std::io::stdin().is_terminal() {
            println!("Enter data to be copied followed by a newline.\nEnd with a backslash and a period on a line by itself, or an EOF signal.");
        }
    }
}

/// `Read::read` for a reader whose `BufRead` side is the real one (its `consume` keeps count).
pub fn read_through_buffer(reader: &mut impl BufRead, buf: &mut [u8]) -> std::io::Result<usize> {
    let available = reader.fill_buf()?;
    let n = available.len().min(buf.len());
    buf[..n].copy_from_slice(&available[..n]);
    reader.consume(n);
    Ok(n)
}

impl Read for DataLines<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        read_through_buffer(self, buf)
    }
}

impl BufRead for DataLines<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.at == self.line.len() && !self.ended {
            let mut line = std::mem::take(&mut self.line);
            line.clear();
            self.at = 0;
            let n = self.source().read_until(b'\n', &mut line)?;
            self.lines += usize::from(n > 0);
            let end_marker = matches!(line.as_slice(), b"\\.\n" | b"\\.\r\n" | b"\\.");
            if n == 0 || end_marker {
                self.ended = true;
                line.clear();
            }
            self.line = line;
        }
        Ok(&self.line[self.at..])
    }

    fn consume(&mut self, amount: usize) {
        self.at = (self.at + amount).min(self.line.len());
    }
}

/// Where `COPY ... TO STDOUT` rows go.
pub enum CopyOut {
    Stdout,
    File { out: BufWriter<File>, path: String },
}

/// The shell as a COPY client.
pub struct ShellCopy<'a> {
    data: DataLines<'a>,
    out: CopyOut,
    /// A COPY TO STDOUT ran: psql prints no command tag for it.
    pub copied_out: bool,
}

impl<'a> ShellCopy<'a> {
    pub fn new(input: Option<&'a mut dyn BufRead>, out: CopyOut) -> ShellCopy<'a> {
        ShellCopy { data: DataLines::new(input), out, copied_out: false }
    }

    /// The rest of a COPY's data that failed before reading it all, skipped as psql skips
    /// it (it sends everything; the server discards it); the lines taken from the input.
    pub fn skip_rest(&mut self) -> usize {
        if self.data.started {
            while !self.data.ended {
                let n = self.data.fill_buf().map(|b| b.len()).unwrap_or(0);
                if n == 0 && !self.data.ended {
                    break;
                }
                self.data.consume(n);
            }
        }
        self.data.lines
    }

    pub fn finish(&mut self) -> Result<()> {
        match &mut self.out {
            CopyOut::Stdout => Ok(()),
            CopyOut::File { out, path } => out.flush().map_err(|e| Error::io(format!("could not write to file \"{path}\""), &e)),
        }
    }
}

impl CopyClient for ShellCopy<'_> {
    fn copy_in(&mut self, _columns: usize) -> Result<&mut dyn BufRead> {
        self.data.greet();
        self.data.started = true;
        Ok(&mut self.data)
    }

    fn copy_out_begin(&mut self, _columns: usize) -> Result<()> {
        self.copied_out = matches!(self.out, CopyOut::Stdout);
        Ok(())
    }

    fn copy_out_row(&mut self, row: &[u8]) -> Result<()> {
        match &mut self.out {
            // A closed pipe (`weft ... | head`) ends the output, not the COPY.
            CopyOut::Stdout => {
                let _ = std::io::stdout().lock().write_all(row);
                Ok(())
            }
            CopyOut::File { out, path } => out.write_all(row).map_err(|e| Error::io(format!("could not write to file \"{path}\""), &e)),
        }
    }
}

/// A `\copy` command read into the COPY statement the shell runs and the client-side file.
#[derive(Debug, PartialEq, Eq)]
pub struct BackslashCopy {
    /// `COPY ... FROM STDIN ...` or `COPY ... TO STDOUT ...`.
    pub sql: String,
    pub from: bool,
    /// The client's file; `None` for stdin / stdout (`pstdin` / `pstdout` too).
    pub file: Option<String>,
}

/// psql's `\copy { table [(columns)] | (query) } { from | to } { 'file' | file | stdin |
/// stdout | pstdin | pstdout } [options]`. The direction is the first `from` / `to` outside
/// parentheses and quotes.
pub fn parse_backslash_copy(argument: &str) -> std::result::Result<BackslashCopy, String> {
    let tokens = tokenize(argument);
    let direction = tokens
        .iter()
        .position(|t| t.depth == 0 && !t.quoted && (t.text.eq_ignore_ascii_case("from") || t.text.eq_ignore_ascii_case("to")))
        .ok_or_else(|| "\\copy: parse error at end of line".to_string())?;
    if direction == 0 {
        return Err(format!("\\copy: parse error at \"{}\"", tokens[direction].text));
    }
    let from = tokens[direction].text.eq_ignore_ascii_case("from");
    let target = tokens.get(direction + 1).ok_or_else(|| "\\copy: parse error at end of line".to_string())?;
    let file = match target.text.to_ascii_lowercase().as_str() {
        _ if target.quoted => Some(target.text.clone()),
        "stdin" | "stdout" | "pstdin" | "pstdout" => None,
        "program" => return Err("\\copy: PROGRAM is not supported by weft's shell".to_string()),
        _ => Some(target.text.clone()),
    };
    let head = &argument[..tokens[direction].start];
    let tail = &argument[target.end..];
    let sql = format!("COPY {} {} {}", head.trim_end(), if from { "FROM STDIN" } else { "TO STDOUT" }, tail.trim_start());
    Ok(BackslashCopy { sql: sql.trim_end().to_string(), from, file })
}

struct Token {
    text: String,
    start: usize,
    end: usize,
    depth: u32,
    quoted: bool,
}

/// Words of a `\copy` line: runs of non-blank characters, `'...'` strings (`''` a quote)
/// as one token without their quotes, parentheses on their own; with their depth.
fn tokenize(line: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut depth = 0u32;
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '(' || c == ')' {
            if c == ')' {
                depth = depth.saturating_sub(1);
            }
            tokens.push(Token { text: c.to_string(), start, end: start + 1, depth, quoted: false });
            if c == '(' {
                depth += 1;
            }
            i += 1;
        } else if c == '\'' {
            let mut text = String::new();
            i += 1;
            while i < chars.len() {
                if chars[i].1 == '\'' {
                    if chars.get(i + 1).is_some_and(|&(_, n)| n == '\'') {
                        text.push('\'');
                        i += 2;
                        continue;
                    }
                    break;
                }
                text.push(chars[i].1);
                i += 1;
            }
            let end = chars.get(i).map_or(line.len(), |&(at, _)| at + 1);
            i += 1;
            tokens.push(Token { text, start, end, depth, quoted: true });
        } else {
            let mut j = i;
            while j < chars.len() && !chars[j].1.is_whitespace() && !matches!(chars[j].1, '(' | ')' | '\'') {
                j += 1;
            }
            let end = chars.get(j).map_or(line.len(), |&(at, _)| at);
            tokens.push(Token { text: line[start..end].to_string(), start, end, depth, quoted: false });
            i = j;
        }
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data_of(input: &str) -> (String, String) {
        let mut reader = std::io::Cursor::new(input.as_bytes().to_vec());
        let mut data = String::new();
        DataLines::new(Some(&mut reader)).read_to_string(&mut data).unwrap();
        let mut rest = String::new();
        reader.read_to_string(&mut rest).unwrap();
        (data, rest)
    }

    #[test]
    fn data_ends_at_the_marker_and_leaves_the_rest() {
        assert_eq!(data_of("1\tx\n2\ty\n\\.\nselect 1;\n"), ("1\tx\n2\ty\n".to_string(), "select 1;\n".to_string()));
        assert_eq!(data_of("1\n\\.\r\nz"), ("1\n".to_string(), "z".to_string()));
        assert_eq!(data_of("1\n2"), ("1\n2".to_string(), String::new()));
        // `\.` inside a line is data.
        assert_eq!(data_of("a\\.\n\\.\n"), ("a\\.\n".to_string(), String::new()));
    }

    #[test]
    fn backslash_copy_becomes_a_stdio_copy() {
        let parsed = parse_backslash_copy("t (a, b) from '/tmp/x y.csv' with (format csv)").unwrap();
        assert_eq!(parsed, BackslashCopy { sql: "COPY t (a, b) FROM STDIN with (format csv)".into(), from: true, file: Some("/tmp/x y.csv".into()) });
        let parsed = parse_backslash_copy("(select a from t where b = 'to') TO stdout csv").unwrap();
        assert_eq!(parsed, BackslashCopy { sql: "COPY (select a from t where b = 'to') TO STDOUT csv".into(), from: false, file: None });
        let parsed = parse_backslash_copy("t to out.txt").unwrap();
        assert_eq!(parsed.file.as_deref(), Some("out.txt"));
        assert!(parse_backslash_copy("t").is_err());
        assert!(parse_backslash_copy("t from program 'cat x'").is_err());
    }
}
