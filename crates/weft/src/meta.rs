//! Backslash commands: the subset of psql's that weft has, printed as psql 15 prints them.
//!
//! `\d` lists tables as psql's `List of relations` (schema `public`, owner `weft`); `\dt`
//! lists tables, `\di` indexes with their tables, `\dti` both; each takes a name pattern.
//! `\d PATTERN` describes every matching relation: psql's `Table "public.NAME"` (without
//! collation and default values, which weft does not have) with its `Indexes:`, or psql's
//! `Index "public.NAME"`. The `+` forms add psql's verbose columns (Persistence, Access
//! method, Size, Description; Storage, Stats target, ...) and footers (`Access method:`,
//! `Options:`).
//!
//! Patterns are psql's: unquoted letters are folded to lower case, `"..."` is taken
//! literally (`""` is a quote), `*` matches any text, `?` one character, and a dot
//! separates a schema pattern (which must match `public`) from the name pattern. Other
//! characters match themselves (psql would read `[`, `+`, `|`, ... as regular expression
//! syntax).
//!
//! Client-side messages are psql's: `Did not find any relation named "x".` on stderr (with
//! `error: ` after the `weft:FILE:LINE: ` prefix in a `-f` script), nothing under `-q`.

use weft_common::SqlState;

use weft_sql::{RelationDescription, RelationInfo};

use std::io::BufRead;

use crate::copy_client::{parse_backslash_copy, CopyOut, ShellCopy};
use crate::output::{format_table, Align, Footer, Table};
use crate::runner::{parse_bool, Location, Outcome, Runner};

/// The owner `\d` shows: weft has no roles.
const OWNER: &str = "weft";
/// The schema `\d` shows: weft has one namespace.
const SCHEMA: &str = "public";

const HELP: &str = "\
General
  \\q                     quit weft
  \\?                     show this help

Query Buffer and Output
  \\timing [on|off]       toggle timing of commands (prints \"Time: ... ms\")
  \\echo [STRING]         write string to standard output

Input/Output
  \\copy ...              perform SQL COPY with data stream to the client host

Informational
  \\d[+]                  list tables
  \\d[+]  NAME            describe table or index (NAME may be a pattern)
  \\dt[+] [PATTERN]       list tables
  \\di[+] [PATTERN]       list indexes

Variables
  \\set [NAME [VALUE]]    set internal variable (ON_ERROR_STOP), or list all
  \\unset NAME            unset internal variable

SQL statements end with \";\"; Ctrl-C cancels the running statement.
";

/// Run one meta-command (`command` is the text after the backslash).
/// `input` is the script the command came from (`\copy ... from stdin` reads it).
pub fn run(runner: &mut Runner, command: &str, location: Location<'_>, input: Option<&mut dyn BufRead>) -> Outcome {
    let (name, argument) = match command.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (command, ""),
    };
    match name {
        "q" | "quit" => Outcome::Quit,
        "?" => {
            runner.print_stdout(HELP);
            Outcome::Ok
        }
        "timing" => timing(runner, argument, location),
        "echo" => {
            runner.print_stdout(&format!("{argument}\n"));
            Outcome::Ok
        }
        "set" => set_variable(runner, argument),
        "copy" => backslash_copy(runner, argument, location, input),
        "unset" => {
            runner.variables.remove(argument);
            Outcome::Ok
        }
        _ => match RelationCommand::parse(name) {
            Some(command) => relations(runner, name, command, argument, location),
            None => {
                // psql adds the hint only when it is interactive.
                let hint = if runner.interactive { "\nTry \\? for help." } else { "" };
                log(runner, Level::Error, &format!("invalid command \\{name}{hint}"), location);
                Outcome::Failed
            }
        },
    }
}

/// `\copy`: COPY through the shell, with the client's files.
fn backslash_copy(runner: &mut Runner, argument: &str, location: Location<'_>, input: Option<&mut dyn BufRead>) -> Outcome {
    let parsed = match parse_backslash_copy(argument) {
        Ok(parsed) => parsed,
        Err(message) => {
            log(runner, Level::Error, &message, location);
            return Outcome::Failed;
        }
    };
    // psql names the file and the system's reason, without Rust's "(os error n)".
    let file_error = |path: &str, e: std::io::Error| {
        let reason = e.to_string();
        let reason = reason.split(" (os error").next().unwrap_or_default().to_string();
        format!("{path}: {reason}")
    };
    match (parsed.from, parsed.file) {
        (true, Some(path)) => match std::fs::File::open(&path) {
            Ok(file) => {
                let mut reader = std::io::BufReader::new(file);
                runner.execute_terminated(&parsed.sql, false, location, &mut ShellCopy::new(Some(&mut reader), CopyOut::Stdout))
            }
            Err(e) => {
                log(runner, Level::Error, &file_error(&path, e), location);
                Outcome::Failed
            }
        },
        (false, Some(path)) => match std::fs::File::create(&path) {
            Ok(file) => {
                let out = CopyOut::File { out: std::io::BufWriter::new(file), path };
                runner.execute_terminated(&parsed.sql, false, location, &mut ShellCopy::new(None, out))
            }
            Err(e) => {
                log(runner, Level::Error, &file_error(&path, e), location);
                Outcome::Failed
            }
        },
        (_, None) => runner.execute_terminated(&parsed.sql, false, location, &mut ShellCopy::new(input, CopyOut::Stdout)),
    }
}

fn timing(runner: &mut Runner, argument: &str, location: Location<'_>) -> Outcome {
    let value = if argument.is_empty() { Some(!runner.timing) } else { parse_bool(argument) };
    let Some(value) = value else {
        let text = format!("unrecognized value \"{argument}\" for \"\\timing\": Boolean expected");
        runner.print_error(&text, location);
        return Outcome::Failed;
    };
    runner.timing = value;
    if !runner.output.quiet {
        runner.print_stdout(if value { "Timing is on.\n" } else { "Timing is off.\n" });
    }
    Outcome::Ok
}

fn set_variable(runner: &mut Runner, argument: &str) -> Outcome {
    if argument.is_empty() {
        let listing: String = runner.variables.iter().map(|(name, value)| format!("{name} = '{value}'\n")).collect();
        runner.print_stdout(&listing);
        return Outcome::Ok;
    }
    let (name, value) = match argument.split_once(char::is_whitespace) {
        Some((name, value)) => (name, value.trim()),
        None => (argument, ""),
    };
    runner.variables.insert(name.to_string(), value.to_string());
    Outcome::Ok
}

/// psql's client-side message levels: in a `-f` script the message reads
/// `weft:FILE:LINE: error: ...` (psql: `psql:FILE:LINE: error: ...`); elsewhere it has no
/// prefix at all.
#[derive(Clone, Copy)]
enum Level {
    Error,
    Warning,
}

fn log(runner: &Runner, level: Level, text: &str, location: Location<'_>) {
    let level = match (location.file, level) {
        (None, _) => "",
        (Some(_), Level::Error) => "error: ",
        (Some(_), Level::Warning) => "warning: ",
    };
    runner.print_error(&format!("{level}{text}"), location);
}

/// `\d`, and `\d` followed by any of `t` (tables), `i` (indexes), `s` (sequences) and `v`
/// (views), each letter at most once, with an optional `+`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RelationCommand {
    tables: bool,
    indexes: bool,
    sequences: bool,
    views: bool,
    /// `\d` without letters: with a pattern it describes, without one it lists tables and
    /// sequences.
    describe: bool,
    verbose: bool,
}

impl RelationCommand {
    fn parse(name: &str) -> Option<RelationCommand> {
        let rest = name.strip_prefix('d')?;
        let (letters, verbose) = match rest.strip_suffix('+') {
            Some(letters) => (letters, true),
            None => (rest, false),
        };
        let count = |letter: char| letters.chars().filter(|&c| c == letter).count();
        if !letters.chars().all(|c| matches!(c, 't' | 'i' | 's' | 'v')) || ['t', 'i', 's', 'v'].iter().any(|&c| count(c) > 1) {
            return None;
        }
        let describe = letters.is_empty();
        Some(RelationCommand {
            tables: describe || count('t') == 1,
            indexes: count('i') == 1,
            sequences: describe || count('s') == 1,
            views: describe || count('v') == 1,
            describe,
            verbose,
        })
    }
}

fn relations(runner: &mut Runner, name: &str, command: RelationCommand, argument: &str, location: Location<'_>) -> Outcome {
    let mut arguments = split_arguments(argument).into_iter();
    let pattern_text = arguments.next();
    for extra in arguments {
        log(runner, Level::Warning, &format!("\\{name}: extra argument \"{extra}\" ignored"), location);
    }
    let pattern = match pattern_text.as_deref().map(NamePattern::parse).transpose() {
        Ok(pattern) => pattern,
        Err(message) => {
            log(runner, Level::Error, &message, location);
            return Outcome::Failed;
        }
    };
    let matches = |relation: &RelationInfo| pattern.as_ref().is_none_or(|p| p.matches(SCHEMA, &relation.name));
    match (&pattern_text, command.describe) {
        (Some(text), true) => describe_matching(runner, text, &matches, command.verbose, location),
        _ => {
            let shown = |relation: &RelationInfo| match relation.kind.as_str() {
                "index" => command.indexes,
                "sequence" => command.sequences,
                "view" => command.views,
                _ => command.tables,
            };
            let relations: Vec<RelationInfo> =
                runner.session.list_relations().into_iter().filter(|r| shown(r) && matches(r)).collect();
            list_relations(runner, &relations, command, pattern_text.as_deref(), location)
        }
    }
}

fn not_found(pattern: Option<&str>) -> String {
    match pattern {
        Some(pattern) => format!("Did not find any relation named \"{pattern}\"."),
        None => "Did not find any relations.".to_string(),
    }
}

/// psql's `listTables`: an empty list is a message (an empty table under `-q`), not a failure.
fn list_relations(
    runner: &mut Runner,
    relations: &[RelationInfo],
    command: RelationCommand,
    pattern: Option<&str>,
    location: Location<'_>,
) -> Outcome {
    if relations.is_empty() && !runner.output.quiet {
        log(runner, Level::Error, &not_found(pattern), location);
        return Outcome::Ok;
    }
    let cell = |s: &str| Some(s.to_string());
    let mut headers = vec!["Schema", "Name", "Type", "Owner"];
    if command.indexes {
        headers.push("Table");
    }
    if command.verbose {
        headers.extend(["Persistence", "Access method", "Size", "Description"]);
    }
    let rows = relations
        .iter()
        .map(|relation| {
            let mut row = vec![cell(SCHEMA), cell(&relation.name), cell(&relation.kind), cell(OWNER)];
            if command.indexes {
                row.push(relation.table.clone());
            }
            if command.verbose {
                let access_method = match relation.kind.as_str() {
                    "index" => cell("btree"),
                    "sequence" | "view" => None,
                    _ => cell("heap"),
                };
                row.extend([cell("permanent"), access_method, Some(size_pretty(relation.size_bytes)), None]);
            }
            row
        })
        .collect();
    let table = Table::text(Some("List of relations"), &headers, rows, Footer::RowCount);
    runner.print_stdout(&format_table(&table, &runner.output));
    Outcome::Ok
}

/// psql's `describeTableDetails`: every relation the pattern matches, by name; none is a
/// failure.
fn describe_matching(
    runner: &mut Runner,
    pattern: &str,
    matches: &dyn Fn(&RelationInfo) -> bool,
    verbose: bool,
    location: Location<'_>,
) -> Outcome {
    let names: Vec<String> = runner.session.list_relations().into_iter().filter(|r| matches(r)).map(|r| r.name).collect();
    if names.is_empty() {
        if !runner.output.quiet {
            log(runner, Level::Error, &not_found(Some(pattern)), location);
        }
        return Outcome::Failed;
    }
    for name in names {
        let description = match runner.session.describe(&name) {
            Ok(description) => description,
            // Dropped since it was listed (another session of the same database).
            Err(error) if error.sqlstate == SqlState::UNDEFINED_TABLE => continue,
            Err(error) => {
                runner.print_error(&error.to_psql_string(), location);
                return Outcome::Failed;
            }
        };
        let table = description_table(&description, verbose);
        runner.print_stdout(&format_table(&table, &runner.output));
    }
    Outcome::Ok
}

fn description_table(description: &RelationDescription, verbose: bool) -> Table {
    let mut footer = description.footer.clone();
    if verbose {
        footer.extend(description.verbose_footer.iter().cloned());
    }
    let storage = |i: usize| description.storage.get(i).cloned();
    if description.kind == "sequence" {
        let headers = ["Type", "Start", "Minimum", "Maximum", "Increment", "Cycles?", "Cache"];
        let title = format!("Sequence \"{SCHEMA}.{}\"", description.name);
        let mut table = Table::text(Some(&title), &headers, vec![description.sequence.iter().cloned().map(Some).collect()], Footer::Lines(footer));
        // psql right-aligns the bigint columns.
        table.aligns = headers.iter().map(|h| if matches!(*h, "Type" | "Cycles?") { Align::Left } else { Align::Right }).collect();
        return table;
    }
    if description.kind == "index" {
        // For an index, the flag says whether the column is a key (not an INCLUDE column).
        let rows = description.columns.iter().enumerate().map(|(i, (column, type_name, key))| {
            let definition = description.definitions.get(i).cloned().unwrap_or_else(|| column.clone());
            let key = if *key { "yes" } else { "no" };
            let mut row = vec![Some(column.clone()), Some(type_name.clone()), Some(key.to_string()), Some(definition)];
            if verbose {
                row.extend([storage(i), None]);
            }
            row
        });
        let mut headers = vec!["Column", "Type", "Key?", "Definition"];
        if verbose {
            headers.extend(["Storage", "Stats target"]);
        }
        let title = format!("Index \"{SCHEMA}.{}\"", description.name);
        Table::text(Some(&title), &headers, rows.collect(), Footer::Lines(footer))
    } else {
        // psql shows a view's columns as a table's, without compression and statistics.
        let view = description.kind == "view";
        let rows = description.columns.iter().enumerate().map(|(i, (column, type_name, nullable))| {
            let nullable = if *nullable { None } else { Some("not null".to_string()) };
            let default = description.defaults.get(i).cloned().flatten();
            let mut row = vec![Some(column.clone()), Some(type_name.clone()), None, nullable, default];
            if verbose && view {
                row.extend([storage(i), None]);
            } else if verbose {
                row.extend([storage(i), None, None, None]);
            }
            row
        });
        let mut headers = vec!["Column", "Type", "Collation", "Nullable", "Default"];
        if verbose && view {
            headers.extend(["Storage", "Description"]);
        } else if verbose {
            headers.extend(["Storage", "Compression", "Stats target", "Description"]);
        }
        let title = format!("{} \"{SCHEMA}.{}\"", if view { "View" } else { "Table" }, description.name);
        Table::text(Some(&title), &headers, rows.collect(), Footer::Lines(footer))
    }
}

/// A meta-command's arguments, split at white space outside double quotes; the quotes stay
/// (they matter to the pattern), as psql's `OT_NORMAL` scanning leaves them.
fn split_arguments(text: &str) -> Vec<String> {
    let mut arguments = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            c if c.is_whitespace() && !quoted => {
                if !current.is_empty() {
                    arguments.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        arguments.push(current);
    }
    arguments
}

/// One piece of a name pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Glob {
    Char(char),
    /// `?`
    One,
    /// `*`
    Any,
}

/// A psql name pattern (`processSQLNamePattern`): an optional schema part and a name part.
/// An empty part matches only an empty name: `\dt public.` finds nothing, as in psql.
#[derive(Clone, Debug, PartialEq, Eq)]
struct NamePattern {
    schema: Option<Vec<Glob>>,
    name: Vec<Glob>,
}

impl NamePattern {
    fn parse(text: &str) -> Result<NamePattern, String> {
        let mut parts: Vec<Vec<Glob>> = vec![Vec::new()];
        let mut quoted = false;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            let part = parts.last_mut().expect("one part at least");
            match c {
                '"' if quoted && chars.peek() == Some(&'"') => {
                    chars.next();
                    part.push(Glob::Char('"'));
                }
                '"' => quoted = !quoted,
                c if quoted => part.push(Glob::Char(c)),
                '.' => parts.push(Vec::new()),
                '*' => part.push(Glob::Any),
                '?' => part.push(Glob::One),
                c => part.push(Glob::Char(c.to_ascii_lowercase())),
            }
        }
        let name = parts.pop().expect("one part at least");
        match parts.len() {
            0 => Ok(NamePattern { schema: None, name }),
            1 => Ok(NamePattern { schema: parts.pop(), name }),
            // database.schema.name: weft has one database, which is not the one named.
            2 => Err(format!("cross-database references are not implemented: {text}")),
            _ => Err(format!("improper qualified name (too many dotted names): {text}")),
        }
    }

    fn matches(&self, schema: &str, name: &str) -> bool {
        self.schema.as_ref().is_none_or(|s| glob_matches(s, schema)) && glob_matches(&self.name, name)
    }
}

fn glob_matches(pattern: &[Glob], text: &str) -> bool {
    let text: Vec<char> = text.chars().collect();
    // Classic wildcard matching with one backtrack point for the last `*`.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(Glob::Any) => {
                star = Some((p, t));
                p += 1;
            }
            Some(Glob::One) => {
                p += 1;
                t += 1;
            }
            Some(Glob::Char(c)) if *c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((star_p, star_t)) => {
                    p = star_p + 1;
                    t = star_t + 1;
                    star = Some((star_p, star_t + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|g| *g == Glob::Any)
}

/// PostgreSQL 15's `pg_size_pretty(bigint)`: bytes below 10 kB, then kB, MB, GB, TB, PB,
/// each rounded half away from zero and used while below 20480 of it.
fn size_pretty(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["kB", "MB", "GB", "TB", "PB"];
    if bytes < 10 * 1024 {
        return format!("{bytes} bytes");
    }
    // In half-units of kB from here on, so that the last step can round.
    let mut halves = bytes / 512;
    for (i, unit) in UNITS.iter().enumerate() {
        if halves < 2 * 10 * 1024 - 1 || i == UNITS.len() - 1 {
            return format!("{} {unit}", halves.div_ceil(2));
        }
        halves /= 1024;
    }
    unreachable!("the last unit always returns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse() {
        let c = |tables, indexes, sequences, views, describe, verbose| Some(RelationCommand { tables, indexes, sequences, views, describe, verbose });
        assert_eq!(RelationCommand::parse("d"), c(true, false, true, true, true, false));
        assert_eq!(RelationCommand::parse("d+"), c(true, false, true, true, true, true));
        assert_eq!(RelationCommand::parse("dt"), c(true, false, false, false, false, false));
        assert_eq!(RelationCommand::parse("di+"), c(false, true, false, false, false, true));
        assert_eq!(RelationCommand::parse("dti"), c(true, true, false, false, false, false));
        assert_eq!(RelationCommand::parse("dit+"), c(true, true, false, false, false, true));
        assert_eq!(RelationCommand::parse("ds"), c(false, false, true, false, false, false));
        assert_eq!(RelationCommand::parse("dv"), c(false, false, false, true, false, false));
        assert_eq!(RelationCommand::parse("dsti+"), c(true, true, true, false, false, true));
        for bad in ["dtt", "dii", "dss", "dvv", "dx", "d++", "x"] {
            assert_eq!(RelationCommand::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn patterns_fold_case_quote_and_glob() {
        let m = |pattern: &str, name: &str| NamePattern::parse(pattern).unwrap().matches("public", name);
        assert!(m("u2", "u2"));
        assert!(m("U2", "u2"));
        assert!(!m("\"U2\"", "u2"));
        assert!(m("\"Mixed\"", "Mixed"));
        assert!(!m("Mixed", "Mixed"));
        assert!(m("\"Idx Upper\"", "Idx Upper"));
        assert!(m("\"a\"\"b\"", "a\"b"));
        assert!(m("u2*", "u2"));
        assert!(m("u2*", "u2_ab"));
        assert!(!m("u2*", "xu2"));
        assert!(m("*_a*", "u2_ab"));
        assert!(m("?2", "u2"));
        assert!(!m("?2", "u22"));
        assert!(m("u2_a\"b\"", "u2_ab"));
        assert!(!m("\"Mix*\"", "Mixed"), "a quoted star is a star");
        assert!(m("public.u2", "u2"));
        assert!(m("*.u2", "u2"));
        assert!(m("PUBLIC.u2", "u2"));
        assert!(!m("other.u2", "u2"));
        assert!(!m("public.", "u2"), "an empty part matches the empty name only, as in psql");
        assert!(!m(".u2", "u2"));
        assert!(!m("\"\"", "u2"));
        assert!(m("a*b*c", "axxbyyc"));
        assert!(!m("a*b*c", "axxbyy"));
        assert_eq!(
            NamePattern::parse("a.b.c").unwrap_err(),
            "cross-database references are not implemented: a.b.c"
        );
        assert_eq!(
            NamePattern::parse("a.b.c.d").unwrap_err(),
            "improper qualified name (too many dotted names): a.b.c.d"
        );
    }

    #[test]
    fn arguments_split_outside_quotes() {
        assert_eq!(split_arguments("  \"Idx Upper\"  extra "), vec!["\"Idx Upper\"", "extra"]);
        assert_eq!(split_arguments(""), Vec::<String>::new());
    }

    /// The values were printed by PostgreSQL 15's `pg_size_pretty`.
    #[test]
    fn sizes_as_pg_size_pretty() {
        let cases = [
            (0, "0 bytes"),
            (8192, "8192 bytes"),
            (10239, "10239 bytes"),
            (10240, "10 kB"),
            (10752, "11 kB"),
            (2260992, "2208 kB"),
            (10436608, "10192 kB"),
            (20479 * 512, "10 MB"),
            (20480 * 512 - 1, "10 MB"),
            (12582912, "12 MB"),
            (1_000_000_000, "954 MB"),
            (30_000_000_000, "28 GB"),
        ];
        for (bytes, expected) in cases {
            assert_eq!(size_pretty(bytes), expected, "{bytes}");
        }
    }
}
