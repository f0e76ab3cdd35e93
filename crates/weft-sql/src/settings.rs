//! Run-time settings (PostgreSQL's GUCs): `SET`, `SHOW`, `RESET`, `--set`, `weft.conf`.
//!
//! Each setting has a kind that validates and normalizes its value, a default, and a
//! context: `Session` settings change with SET; `Startup` settings (PostgreSQL's
//! postmaster context, e.g. `shared_buffers`) are fixed when the database is opened.

use std::collections::BTreeMap;

use weft_common::units::{format_duration_ms, format_memory, parse_duration_ms_in_range, parse_memory, parse_memory_in_range};
use weft_common::{Error, Result, SqlState};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    Session,
    Startup,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Memory size; the unit of a bare number in bytes (1024 for kB, 8192 for blocks), and
    /// PostgreSQL's minimum in those units.
    Memory { unit_bytes: usize, min_units: i64 },
    Integer { min: i64, max: i64 },
    /// A duration in milliseconds, given with PostgreSQL's time units (`30s`, `1min`) or as
    /// a bare number of milliseconds.
    Milliseconds { min: i64, max: i64 },
    /// A floating-point number in a range (PostgreSQL's `real` GUCs).
    Real { min: f64, max: f64 },
    Bool,
    /// Free text (accepted and shown back).
    Text,
    /// Comma-separated non-negative integers, possibly none.
    IntegerList,
    Enum(&'static [&'static str]),
}

struct Definition {
    name: &'static str,
    kind: Kind,
    default: &'static str,
    context: Context,
    description: &'static str,
}

const KB: usize = 1024;
const BLOCK: usize = 8192;

/// Every setting weft knows. `max_worker_processes`'s default is the core count and is
/// filled in at start-up.
const DEFINITIONS: &[Definition] = &[
    Definition { name: "shared_buffers", kind: Kind::Memory { unit_bytes: BLOCK, min_units: 16 }, default: "128MB", context: Context::Startup, description: "Sets the number of shared memory buffers used by the server." },
    Definition { name: "max_worker_processes", kind: Kind::Integer { min: 0, max: 262143 }, default: "0", context: Context::Startup, description: "Maximum number of concurrent worker threads." },
    Definition { name: "buffer_mapping", kind: Kind::Enum(&["hash", "art"]), default: "art", context: Context::Startup, description: "Page table of the buffer manager: a tree of adaptive radix trees (relation fork, then block; the default), or PostgreSQL's partitioned hash table." },
    Definition { name: "weft_buffer_drop_lookup", kind: Kind::Bool, default: "off", context: Context::Startup, description: "With buffer_mapping = hash, DROP and TRUNCATE of a relation smaller than shared_buffers/32 look its blocks up instead of visiting every buffer. PostgreSQL 15 does so only during recovery, which weft never is in: off (the default) is its behaviour in normal running, a scan of every buffer descriptor." },
    Definition { name: "fsync", kind: Kind::Bool, default: "on", context: Context::Startup, description: "Forces synchronization of updates to disk (off: a machine crash can lose committed data, as in PostgreSQL)." },
    Definition { name: "work_mem", kind: Kind::Memory { unit_bytes: KB, min_units: 64 }, default: "4MB", context: Context::Session, description: "Sets the maximum memory to be used for query workspaces." },
    Definition { name: "maintenance_work_mem", kind: Kind::Memory { unit_bytes: KB, min_units: 1024 }, default: "64MB", context: Context::Session, description: "Sets the maximum memory to be used for maintenance operations." },
    Definition { name: "max_parallel_workers_per_gather", kind: Kind::Integer { min: 0, max: 1024 }, default: "2", context: Context::Session, description: "Sets the maximum number of parallel processes per executor node." },
    Definition { name: "max_parallel_maintenance_workers", kind: Kind::Integer { min: 0, max: 1024 }, default: "2", context: Context::Session, description: "Sets the maximum number of parallel processes per maintenance operation." },
    Definition { name: "enable_seqscan", kind: Kind::Bool, default: "on", context: Context::Session, description: "Enables the planner's use of sequential-scan plans." },
    Definition { name: "enable_indexscan", kind: Kind::Bool, default: "on", context: Context::Session, description: "Enables the planner's use of index-scan plans." },
    Definition { name: "enable_indexonlyscan", kind: Kind::Bool, default: "on", context: Context::Session, description: "Enables the planner's use of index-only-scan plans." },
    Definition { name: "enable_hashjoin", kind: Kind::Bool, default: "on", context: Context::Session, description: "Enables the planner's use of hash join plans." },
    Definition { name: "enable_parallel_hash", kind: Kind::Bool, default: "on", context: Context::Session, description: "Enables the planner's use of parallel hash plans." },
    Definition { name: "hash_mem_multiplier", kind: Kind::Real { min: 1.0, max: 1000.0 }, default: "2", context: Context::Session, description: "Multiple of work_mem to use for hash tables." },
    Definition { name: "parallel_hash_min_inner_rows", kind: Kind::Integer { min: 0, max: i64::MAX }, default: "0", context: Context::Session, description: "Estimated build-side rows from which a parallel hash join builds one shared table (parallel-aware) instead of one table per participant." },
    Definition { name: "weft_hash_attach_phases", kind: Kind::IntegerList, default: "", context: Context::Session, description: "Debug: the barrier phase at which each participant of a parallel hash join attaches (comma-separated, in arrival order)." },
    Definition { name: "weft_hash_dense_up_front", kind: Kind::Bool, default: "on", context: Context::Session, description: "Builds an int4 key-only hash join side whose key column has a zone map straight into a bitmap of the map's range, in one batch." },
    Definition { name: "parallel_leader_participation", kind: Kind::Bool, default: "on", context: Context::Session, description: "Controls whether Gather and Gather Merge also run subplans." },
    Definition { name: "min_parallel_table_scan_size", kind: Kind::Memory { unit_bytes: BLOCK, min_units: 0 }, default: "8MB", context: Context::Session, description: "Sets the minimum amount of table data for a parallel scan." },
    Definition { name: "parallel_sort_strategy", kind: Kind::Enum(&["partition", "leader_merge"]), default: "partition", context: Context::Session, description: "How participants' sorted runs are merged: by key range in every participant, or by the leader alone." },
    Definition { name: "trace_sort", kind: Kind::Bool, default: "off", context: Context::Session, description: "Emit information about resource usage in sorting." },
    Definition { name: "client_min_messages", kind: Kind::Enum(&["debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning", "error"]), default: "notice", context: Context::Session, description: "Sets the message levels that are sent to the client." },
    Definition { name: "application_name", kind: Kind::Text, default: "", context: Context::Session, description: "Sets the application name to be reported." },
    Definition { name: "search_path", kind: Kind::Text, default: "\"$user\", public", context: Context::Session, description: "Sets the schema search order for names that are not schema-qualified." },
    Definition { name: "client_encoding", kind: Kind::Enum(&["UTF8"]), default: "UTF8", context: Context::Session, description: "Sets the client's character set encoding." },
    Definition { name: "DateStyle", kind: Kind::Text, default: "ISO, MDY", context: Context::Session, description: "Sets the display format for date and time values." },
    Definition { name: "TimeZone", kind: Kind::Text, default: "UTC", context: Context::Session, description: "Sets the time zone for displaying and interpreting time stamps." },
    Definition { name: "extra_float_digits", kind: Kind::Integer { min: -15, max: 3 }, default: "1", context: Context::Session, description: "Sets the number of digits displayed for floating-point values." },
    Definition { name: "lock_timeout", kind: Kind::Milliseconds { min: 0, max: i32::MAX as i64 }, default: "0", context: Context::Session, description: "Sets the maximum allowed duration (in milliseconds) of any wait for a lock: in weft, for the database's write lock, which a writing statement or a transaction block that has written holds. 0 waits until canceled." },
    Definition { name: "statement_timeout", kind: Kind::Milliseconds { min: 0, max: i32::MAX as i64 }, default: "0", context: Context::Session, description: "Accepted for compatibility; not enforced." },
];

fn definition(name: &str) -> Result<&'static Definition> {
    DEFINITIONS.iter().find(|d| d.name.eq_ignore_ascii_case(name)).ok_or_else(|| {
        Error::new(SqlState::UNDEFINED_OBJECT, format!("unrecognized configuration parameter \"{name}\""))
    })
}

fn invalid(def: &Definition, value: &str) -> Error {
    Error::new(SqlState::INVALID_PARAMETER_VALUE, format!("invalid value for parameter \"{}\": \"{value}\"", def.name))
}

/// Validate and normalize `value` for `def`.
fn normalize(def: &Definition, value: &str) -> Result<String> {
    let trimmed = value.trim();
    Ok(match def.kind {
        Kind::Memory { unit_bytes, min_units } => {
            let bytes = parse_memory_in_range(trimmed, unit_bytes, def.name, min_units, i32::MAX as i64)?;
            format_memory(bytes)
        }
        Kind::Integer { min, max } => {
            let v: i64 = trimmed.parse().map_err(|_| {
                Error::new(
                    SqlState::INVALID_PARAMETER_VALUE,
                    format!("invalid value for parameter \"{}\": \"{value}\"", def.name),
                )
            })?;
            if v < min || v > max {
                return Err(Error::new(
                    SqlState::INVALID_PARAMETER_VALUE,
                    format!("{v} is outside the valid range for parameter \"{}\" ({min} .. {max})", def.name),
                ));
            }
            v.to_string()
        }
        Kind::Milliseconds { min, max } => format_duration_ms(parse_duration_ms_in_range(trimmed, def.name, min, max)?),
        Kind::Real { min, max } => {
            let v: f64 = trimmed.parse().ok().filter(|v: &f64| v.is_finite()).ok_or_else(|| {
                Error::new(
                    SqlState::INVALID_PARAMETER_VALUE,
                    format!("parameter \"{}\" requires a numeric value", def.name),
                )
            })?;
            if v < min || v > max {
                return Err(Error::new(
                    SqlState::INVALID_PARAMETER_VALUE,
                    format!("{v} is outside the valid range for parameter \"{}\" ({min} .. {max})", def.name),
                ));
            }
            v.to_string()
        }
        Kind::Bool => match parse_bool(trimmed) {
            Some(true) => "on".to_string(),
            Some(false) => "off".to_string(),
            None => {
                return Err(Error::new(
                    SqlState::INVALID_PARAMETER_VALUE,
                    format!("parameter \"{}\" requires a Boolean value", def.name),
                ))
            }
        },
        Kind::Text if def.name == "TimeZone" => crate::datetime_bind::time_zone_setting(trimmed)?,
        Kind::Text if def.name == "DateStyle" => crate::datetime_bind::date_style_setting(trimmed)?,
        Kind::Text => trimmed.to_string(),
        Kind::IntegerList => {
            let items: Vec<&str> = trimmed.split(',').map(str::trim).filter(|item| !item.is_empty()).collect();
            if items.iter().any(|item| item.parse::<u32>().is_err()) {
                return Err(invalid(def, value).with_detail("Expected a comma-separated list of non-negative integers."));
            }
            items.join(",")
        }
        Kind::Enum(values) => match values.iter().find(|v| v.eq_ignore_ascii_case(trimmed)) {
            Some(v) => v.to_string(),
            None => {
                return Err(invalid(def, value).with_hint(format!("Available values: {}.", values.join(", "))))
            }
        },
    })
}

fn parse_bool(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" | "t" | "y" => Some(true),
        "off" | "false" | "no" | "0" | "f" | "n" => Some(false),
        _ => None,
    }
}

/// One session's view of the settings: defaults, then start-up values, then SETs.
#[derive(Clone, Debug)]
pub struct Settings {
    startup: BTreeMap<&'static str, String>,
    session: BTreeMap<&'static str, String>,
}

impl Settings {
    /// Settings as of start-up: `pairs` come from `weft.conf` and `--set`, later ones win.
    pub fn startup(pairs: &[(String, String)]) -> Result<Settings> {
        let mut startup = BTreeMap::new();
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        startup.insert("max_worker_processes", cores.to_string());
        for (name, value) in pairs {
            let def = definition(name)?;
            startup.insert(def.name, normalize(def, value)?);
        }
        Ok(Settings { startup, session: BTreeMap::new() })
    }

    /// `SET name = value`.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let def = definition(name)?;
        if def.context == Context::Startup {
            return Err(Error::new(
                SqlState::CANT_CHANGE_RUNTIME_PARAM,
                format!("parameter \"{}\" cannot be changed without restarting the server", def.name),
            ));
        }
        let value = normalize(def, value)?;
        self.session.insert(def.name, value);
        Ok(())
    }

    /// `RESET name`.
    pub fn reset(&mut self, name: &str) -> Result<()> {
        let def = definition(name)?;
        if def.context == Context::Startup {
            return Err(Error::new(
                SqlState::CANT_CHANGE_RUNTIME_PARAM,
                format!("parameter \"{}\" cannot be changed without restarting the server", def.name),
            ));
        }
        self.session.remove(def.name);
        Ok(())
    }

    /// Take `name`'s SET value (or its absence) from `other`.
    pub(crate) fn copy_value(&mut self, other: &Settings, name: &str) {
        let Ok(def) = definition(name) else { return };
        match other.session.get(def.name) {
            Some(value) => self.session.insert(def.name, value.clone()),
            None => self.session.remove(def.name),
        };
    }

    pub fn reset_all(&mut self) {
        self.session.clear();
    }

    /// `SHOW name`: the value as PostgreSQL prints it.
    pub fn show(&self, name: &str) -> Result<String> {
        let def = definition(name)?;
        Ok(self.value(def))
    }

    fn value(&self, def: &'static Definition) -> String {
        if let Some(v) = self.session.get(def.name).or_else(|| self.startup.get(def.name)) {
            return v.clone();
        }
        normalize(def, def.default).unwrap_or_else(|_| def.default.to_string())
    }

    /// `SHOW ALL`: (name, setting, description).
    pub fn all(&self) -> Vec<(String, String, String)> {
        let mut rows: Vec<_> = DEFINITIONS
            .iter()
            .map(|d| (d.name.to_string(), self.value(d), d.description.to_string()))
            .collect();
        rows.sort_by_key(|r| r.0.to_ascii_lowercase());
        rows
    }

    pub fn memory_bytes(&self, name: &str) -> usize {
        let def = definition(name).expect("memory setting is defined");
        let Kind::Memory { unit_bytes, .. } = def.kind else { panic!("{name} is not a memory setting") };
        parse_memory(&self.value(def), unit_bytes, def.name).expect("stored settings are valid")
    }

    pub fn integer(&self, name: &str) -> i64 {
        let def = definition(name).expect("integer setting is defined");
        self.value(def).parse().expect("stored integer settings are valid")
    }

    pub fn milliseconds(&self, name: &str) -> i64 {
        let def = definition(name).expect("time setting is defined");
        let Kind::Milliseconds { min, max } = def.kind else { panic!("{name} is not a time setting") };
        parse_duration_ms_in_range(&self.value(def), def.name, min, max).expect("stored time settings are valid")
    }

    pub fn boolean(&self, name: &str) -> bool {
        let def = definition(name).expect("bool setting is defined");
        self.value(def) == "on"
    }

    pub fn real(&self, name: &str) -> f64 {
        let def = definition(name).expect("real setting is defined");
        self.value(def).parse().expect("stored real settings are valid")
    }

    pub fn integer_list(&self, name: &str) -> Vec<usize> {
        let def = definition(name).expect("list setting is defined");
        self.value(def).split(',').filter(|item| !item.is_empty()).map(|item| item.parse().expect("stored lists are valid")).collect()
    }

    pub fn text(&self, name: &str) -> String {
        let def = definition(name).expect("setting is defined");
        self.value(def)
    }
}

/// Parse `weft.conf`: `name = value` lines, `#` comments, values optionally quoted.
pub fn parse_conf(text: &str) -> Result<Vec<(String, String)>> {
    let mut pairs = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let Some((name, value)) = line.split_once('=').or_else(|| line.split_once(char::is_whitespace)) else {
            return Err(Error::syntax(format!("syntax error in file \"weft.conf\" line {}", number + 1)));
        };
        let value = value.trim().trim_matches('\'');
        pairs.push((name.trim().to_string(), value.to_string()));
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_show_reset() {
        let mut s = Settings::startup(&[]).unwrap();
        assert_eq!(s.show("work_mem").unwrap(), "4MB");
        s.set("work_mem", "64kB").unwrap();
        assert_eq!(s.show("WORK_MEM").unwrap(), "64kB");
        assert_eq!(s.memory_bytes("work_mem"), 64 * 1024);
        s.reset("work_mem").unwrap();
        assert_eq!(s.memory_bytes("work_mem"), 4 * 1024 * 1024);
        assert_eq!(s.show("shared_buffers").unwrap(), "128MB");
        assert_eq!(s.memory_bytes("shared_buffers"), 128 * 1024 * 1024);
        assert!(s.set("shared_buffers", "1GB").is_err());
        assert_eq!(s.set("nope", "1").unwrap_err().sqlstate, SqlState::UNDEFINED_OBJECT);
        assert!(s.set("parallel_leader_participation", "maybe").is_err());
        s.set("parallel_leader_participation", "off").unwrap();
        assert!(!s.boolean("parallel_leader_participation"));
    }

    #[test]
    fn startup_settings_and_conf() {
        let pairs = parse_conf("# comment\nshared_buffers = '16MB'\nwork_mem=1MB # trailing\n").unwrap();
        let s = Settings::startup(&pairs).unwrap();
        assert_eq!(s.memory_bytes("shared_buffers"), 16 * 1024 * 1024);
        assert_eq!(s.show("work_mem").unwrap(), "1MB");
    }
}
