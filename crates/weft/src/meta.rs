//! Backslash commands: the subset of psql's that weft has, printed as psql prints them.
//!
//! `\d` lists tables as psql's `List of relations` (schema `public`, owner `weft`); `\di` lists
//! indexes with their tables; `\d NAME` is psql's `Table "public.NAME"` (without the default
//! and collation values, which weft does not have) with its `Indexes:`, or psql's
//! `Index "public.NAME"`.

use weft_common::SqlState;

use crate::output::{format_table, Footer, Table};
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

Informational
  \\d                     list tables
  \\dt                    list tables
  \\di                    list indexes
  \\d NAME                describe table or index

Variables
  \\set [NAME [VALUE]]    set internal variable (ON_ERROR_STOP), or list all
  \\unset NAME            unset internal variable

SQL statements end with \";\"; Ctrl-C cancels the running statement.
";

/// Run one meta-command (`command` is the text after the backslash).
pub fn run(runner: &mut Runner, command: &str, location: Location<'_>) -> Outcome {
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
        "unset" => {
            runner.variables.remove(argument);
            Outcome::Ok
        }
        "d" | "d+" | "dt" | "dt+" | "di" | "di+" if argument.is_empty() => list_relations(runner, name, location),
        "d" | "d+" => describe(runner, argument, location),
        _ => {
            let text = match location.file {
                Some(_) => format!("error: invalid command \\{name}"),
                None => format!("invalid command \\{name}\nTry \\? for help."),
            };
            runner.print_error(&text, location);
            Outcome::Failed
        }
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

fn list_relations(runner: &mut Runner, name: &str, location: Location<'_>) -> Outcome {
    let indexes = name.starts_with("di");
    let relations: Vec<_> = runner
        .session
        .list_relations()
        .into_iter()
        .filter(|relation| if indexes { relation.kind == "index" } else { relation.kind != "index" })
        .collect();
    if relations.is_empty() {
        runner.print_error("Did not find any relations.", location);
        return Outcome::Ok;
    }
    let cell = |s: &str| Some(s.to_string());
    let rows = relations
        .iter()
        .map(|relation| {
            let mut row = vec![cell(SCHEMA), cell(&relation.name), cell(&relation.kind), cell(OWNER)];
            if indexes {
                row.push(relation.table.clone());
            }
            row
        })
        .collect();
    let headers: &[&str] =
        if indexes { &["Schema", "Name", "Type", "Owner", "Table"] } else { &["Schema", "Name", "Type", "Owner"] };
    let table = Table::text(Some("List of relations"), headers, rows, Footer::RowCount);
    runner.print_stdout(&format_table(&table, &runner.output));
    Outcome::Ok
}

fn describe(runner: &mut Runner, name: &str, location: Location<'_>) -> Outcome {
    let description = match runner.session.describe(name) {
        Ok(description) => description,
        Err(error) if error.sqlstate == SqlState::UNDEFINED_TABLE => {
            runner.print_error(&format!("Did not find any relation named \"{name}\"."), location);
            return Outcome::Failed;
        }
        Err(error) => {
            runner.print_error(&error.to_psql_string(), location);
            return Outcome::Failed;
        }
    };
    let footer = Footer::Lines(description.footer.clone());
    let table = if description.kind == "index" {
        let rows = description
            .columns
            .iter()
            .map(|(column, type_name, _)| vec![Some(column.clone()), Some(type_name.clone()), Some("yes".to_string()), Some(column.clone())]);
        let title = format!("Index \"{SCHEMA}.{}\"", description.name);
        Table::text(Some(&title), &["Column", "Type", "Key?", "Definition"], rows.collect(), footer)
    } else {
        let rows = description.columns.iter().map(|(column, type_name, nullable)| {
            let nullable = if *nullable { None } else { Some("not null".to_string()) };
            vec![Some(column.clone()), Some(type_name.clone()), None, nullable, None]
        });
        let title = format!("Table \"{SCHEMA}.{}\"", description.name);
        Table::text(Some(&title), &["Column", "Type", "Collation", "Nullable", "Default"], rows.collect(), footer)
    };
    runner.print_stdout(&format_table(&table, &runner.output));
    Outcome::Ok
}
