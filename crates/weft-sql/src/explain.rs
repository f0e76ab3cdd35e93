//! EXPLAIN and EXPLAIN ANALYZE, in PostgreSQL 15's text format.
//!
//! weft's plan shapes map to PostgreSQL's node names:
//!
//! | weft plan | PostgreSQL nodes |
//! |---|---|
//! | pipeline over a heap | `Seq Scan on t`; with workers `Gather` → `Parallel Seq Scan on t` |
//! | pipeline over `generate_series` | `Function Scan on generate_series`; with workers `Gather` → `Parallel Function Scan` (weft scans a series in parallel; PostgreSQL cannot) |
//! | pipeline over VALUES | `Values Scan on "*VALUES*"`; one row: `Result` |
//! | pipeline over nothing (`SELECT 1`) | `Result` |
//! | pipeline over a subquery | `Subquery Scan on alias` → the subquery's plan |
//! | aggregate | `Aggregate` / `HashAggregate` (with `Group Key:`); with workers `Finalize …` → `Gather` → `Partial …` |
//! | sort | `Sort` (`Sort Key:`); over a parallel pipeline `Gather Merge` → `Sort` → `Parallel Seq Scan` |
//! | limit | `Limit` |
//!
//! A pipeline's filters print as the scan's `Filter:`, its projections only as VERBOSE's
//! `Output:`. Estimates come from the cost model in `cost.rs`.
//!
//! EXPLAIN ANALYZE runs the plan, discards its rows, and matches what the executor
//! recorded (`ExecContext::stats` per pipeline, `ExecContext::nodes` per aggregate, limit
//! and sort, `ExecContext::sort_reports`) to the plan's nodes by their address
//! (`weft_exec::node_id`). Times are PostgreSQL's: per loop, in milliseconds, from the
//! node's start to its first row and to its last; a node run by every participant of a
//! pipeline has one loop per participant, and its rows are the average per loop. Blocking
//! nodes (aggregate, sort, limit, which return their rows at once) have startup = total
//! for an aggregate, and, for a sort, startup at the end of its input.
//! Departures: a parallel scan's time includes its sink's work (the partial aggregate or
//! the sort's run phase run in the same loop), the sort under `Gather Merge` shows the
//! whole sort's end as its total, and a parallel sort's `Sort Method:` line is the
//! sort's own report (`SortReport::explain_line`, over all participants) where
//! PostgreSQL prints the leader's share; the `Worker N:` lines are each worker's.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlparser::ast::{self, Statement};
use weft_access::Catalog;
use weft_common::parallel::CancelToken;
use weft_common::{DataType, Datum, Error, Result, SqlState};
use weft_exec::expr::{Expr, InitPlan};
use weft_access::btree::ScanDirection;
use weft_exec::plan::{AggregateCall, HashJoin, HashJoinMode, HeapSource, JoinType, Pipeline, Plan, SetOpPlan, SetOperator, SortPlan, Source, Step, WindowFunction, WindowPlan};
use weft_exec::{node_id, HashJoinStats, NodeStats, PipelineStats, SortReport};

use crate::api::{ColumnInfo, QueryResult};
use crate::bind::object_name;
use crate::cost::{
    self, Estimate, CPU_OPERATOR_COST, CPU_TUPLE_COST, PARALLEL_SETUP_COST, PARALLEL_TUPLE_COST, SEQ_PAGE_COST,
};
use crate::selectivity::{self, RelStats};
use crate::join_size::{join_rows, key_column, KeyDistinct};
use crate::deparse::{aggregate_call, column_reference, deparse, quote_identifier, ColumnText};
use crate::session::Session;
use crate::statements;

/// What EXPLAIN prints (its options, as PostgreSQL spells them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExplainOptions {
    pub analyze: bool,
    pub verbose: bool,
    /// `COSTS OFF` drops the `(cost=...)` parentheses.
    pub costs: bool,
    /// `TIMING OFF` (with ANALYZE) drops `actual time=`.
    pub timing: bool,
    /// `Planning Time` / `Execution Time` at the end (default: on with ANALYZE).
    pub summary: bool,
}

impl Default for ExplainOptions {
    fn default() -> Self {
        ExplainOptions { analyze: false, verbose: false, costs: true, timing: true, summary: false }
    }
}

/// Parse `EXPLAIN [ANALYZE] [VERBOSE]` and `EXPLAIN (option [value], ...)`.
pub fn parse_options(
    analyze: bool,
    verbose: bool,
    format: Option<&ast::AnalyzeFormatKind>,
    options: Option<&[ast::UtilityOption]>,
) -> Result<ExplainOptions> {
    let mut out = ExplainOptions { analyze, verbose, ..ExplainOptions::default() };
    if let Some(format) = format {
        let (ast::AnalyzeFormatKind::Keyword(format) | ast::AnalyzeFormatKind::Assignment(format)) = format;
        check_format(&format.to_string())?;
    }
    let (mut timing, mut summary) = (None, None);
    for option in options.unwrap_or_default() {
        let name = option.name.value.to_lowercase();
        match name.as_str() {
            "analyze" => out.analyze = boolean_option(&name, option.arg.as_ref())?,
            "verbose" => out.verbose = boolean_option(&name, option.arg.as_ref())?,
            "costs" => out.costs = boolean_option(&name, option.arg.as_ref())?,
            "timing" => timing = Some(boolean_option(&name, option.arg.as_ref())?),
            "summary" => summary = Some(boolean_option(&name, option.arg.as_ref())?),
            // Accepted; weft has no buffer, WAL or changed-settings figures to show yet.
            "buffers" | "wal" | "settings" => {
                boolean_option(&name, option.arg.as_ref())?;
            }
            "format" => match option.arg.as_ref().map(option_text) {
                Some(value) => check_format(&value)?,
                None => return Err(Error::syntax("format requires a parameter")),
            },
            _ => return Err(Error::syntax(format!("unrecognized EXPLAIN option \"{name}\""))),
        }
    }
    if timing == Some(true) && !out.analyze {
        return Err(Error::new(SqlState::INVALID_PARAMETER_VALUE, "EXPLAIN option TIMING requires ANALYZE"));
    }
    out.timing = timing.unwrap_or(out.analyze);
    out.summary = summary.unwrap_or(out.analyze);
    Ok(out)
}

fn option_text(arg: &ast::Expr) -> String {
    match arg {
        ast::Expr::Identifier(i) => i.value.clone(),
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s.clone(),
            ast::Value::Number(n, _) => n.clone(),
            ast::Value::Boolean(b) => b.to_string(),
            other => other.to_string(),
        },
        other => other.to_string(),
    }
}

/// PostgreSQL's `defGetBoolean`.
fn boolean_option(name: &str, arg: Option<&ast::Expr>) -> Result<bool> {
    let Some(arg) = arg else { return Ok(true) };
    match option_text(arg).to_lowercase().as_str() {
        "true" | "on" | "1" => Ok(true),
        "false" | "off" | "0" => Ok(false),
        _ => Err(Error::syntax(format!("{name} requires a Boolean value"))),
    }
}

fn check_format(value: &str) -> Result<()> {
    match value.to_lowercase().as_str() {
        "text" => Ok(()),
        "json" | "xml" | "yaml" => Err(Error::not_supported(format!("EXPLAIN (FORMAT {}) is not supported yet: only TEXT", value.to_uppercase()))),
        other => Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("unrecognized value for EXPLAIN option \"format\": \"{other}\""),
        )),
    }
}

/// What an EXPLAIN ANALYZE run recorded.
pub struct RunStats {
    pub pipelines: Vec<PipelineStats>,
    pub nodes: Vec<NodeStats>,
    pub sort_reports: Vec<SortReport>,
    pub leader_participates: bool,
    pub joins: Vec<HashJoinStats>,
}

impl RunStats {
    fn pipeline(&self, pipeline: &Pipeline) -> Option<&PipelineStats> {
        let id = node_id(pipeline);
        self.pipelines.iter().find(|s| s.node == id)
    }

    fn node(&self, plan: &Plan) -> Option<&NodeStats> {
        let id = node_id(plan);
        self.nodes.iter().find(|s| s.node == id)
    }

    /// A hash join's statistics, its participants' figures summed when it ran more than once.
    fn join(&self, join: &HashJoin) -> Option<&HashJoinStats> {
        let id = node_id(join);
        self.joins.iter().find(|s| s.node == id)
    }
}

/// The `EXPLAIN` statement.
pub(crate) fn explain(
    session: &mut Session,
    statement: &Statement,
    analyze: bool,
    verbose: bool,
    format: Option<&ast::AnalyzeFormatKind>,
    options: Option<&[ast::UtilityOption]>,
    cancel: &CancelToken,
) -> Result<QueryResult> {
    let options = parse_options(analyze, verbose, format, options)?;
    let planning_began = Instant::now();
    let catalog = session.catalog();
    let (plan, insert_into) = match statement {
        Statement::Query(query) => (statements::plan_output(session, &catalog, query)?.plan, None),
        Statement::CreateTable(create) if create.query.is_some() => {
            if options.analyze {
                return Err(Error::not_supported("EXPLAIN ANALYZE of CREATE TABLE AS is not supported yet"));
            }
            let query = create.query.as_ref().expect("checked");
            (statements::plan_output(session, &catalog, query)?.plan, None)
        }
        Statement::Insert(insert) => {
            if options.analyze {
                return Err(Error::not_supported("EXPLAIN ANALYZE of INSERT is not supported yet"));
            }
            let table_name = match &insert.table {
                ast::TableObject::TableName(name) => object_name(name)?,
                other => return Err(Error::not_supported(format!("INSERT INTO {other}"))),
            };
            let source = insert.source.as_ref().ok_or_else(|| Error::not_supported("INSERT without a query"))?;
            let table = catalog.table(&table_name)?.clone();
            let names = insert.columns.iter().map(object_name).collect::<Result<Vec<_>>>()?;
            let targets = statements::target_columns(&table, &names)?;
            (statements::insert_plan(session, &catalog, &table, &targets, !names.is_empty(), source)?, Some(table_name))
        }
        _ => return Err(Error::not_supported("EXPLAIN is supported for SELECT, INSERT and CREATE TABLE AS only")),
    };
    let planning = planning_began.elapsed();

    let mut execution = None;
    let run = if options.analyze {
        let ctx = statements::exec_context(session, cancel);
        let began = Instant::now();
        let outcome = statements::run_query_plan_discarding(&plan, &ctx);
        execution = Some(began.elapsed());
        let sort_reports = ctx.sort_reports.lock().clone();
        statements::finish_context(session, &ctx);
        outcome?;
        let leader_participates = ctx.leader_participates;
        let run = RunStats {
            pipelines: ctx.stats.into_inner(),
            nodes: ctx.nodes.into_inner(),
            sort_reports,
            leader_participates,
            joins: ctx.joins.into_inner(),
        };
        session.last_pipeline_stats = run.pipelines.clone();
        Some(run)
    } else {
        None
    };

    // Every init plan, kept here so the builder can borrow their plans.
    let init_plans = plan.init_plans();
    let mut subplans = Vec::new();
    plan.for_each_expr(&mut |e| e.collect_subplans(&mut subplans));
    let init_plan_entries: usize = init_plans.iter().map(|p| range_entries(&p.plan)).sum::<usize>()
        + subplans.iter().map(|p| range_entries(&p.plan)).sum::<usize>();
    let builder = Builder {
        catalog: &catalog,
        options,
        multiple_entries: range_entries(&plan) + init_plan_entries + insert_into.is_some() as usize > 1,
        leader_participates: session.settings.boolean("parallel_leader_participation"),
        work_mem: session.settings.memory_bytes("work_mem"),
        run: run.as_ref(),
        used_names: RefCell::new(Vec::new()),
        ctes: RefCell::new(Vec::new()),
        cte_names: RefCell::new(Vec::new()),
        subplan_args: RefCell::new(Vec::new()),
    };
    // The INSERT's target is the first range-table entry: it keeps its name.
    if let Some(table) = &insert_into {
        builder.unique_name(table);
    }
    let mut root = builder.plan(&plan);
    if let Some(table) = insert_into {
        root = builder.insert(&table, root);
    }
    let mut sections = builder.ctes.take();
    sections.extend(init_plan_sections(&builder, &plan, &init_plans));
    let mut lines = Vec::new();
    render_with_init_plans(&root.node, &sections, 0, &options, &mut lines);
    if options.summary {
        lines.push(format!("Planning Time: {:.3} ms", millis(planning)));
    }
    if let (true, Some(execution)) = (options.summary, execution) {
        lines.push(format!("Execution Time: {:.3} ms", millis(execution)));
    }
    let rows = lines.into_iter().map(|l| vec![Datum::Text(l)]).collect();
    Ok(QueryResult::rows(vec![ColumnInfo { name: "QUERY PLAN".to_string(), data_type: DataType::Text, type_modifier: None }], rows, "EXPLAIN"))
}

/// An `InitPlan n (returns $m)` section printed under a node: the subquery's tree and
/// the init plans that subquery reads.
struct InitPlanSection {
    title: String,
    node: Node,
    init_plans: Vec<InitPlanSection>,
}

/// The sections of the init plans `plan` reads directly (those of `all`, every init plan
/// of the statement), each with its own nested ones, then those of its subplans
/// (`SubPlan n`). PostgreSQL attaches an InitPlan to the top node of the query level that
/// uses it, and a SubPlan to the node that evaluates it; here both go under the root of
/// `plan`.
fn init_plan_sections<'a>(builder: &Builder<'a>, plan: &Plan, all: &'a [Arc<InitPlan>]) -> Vec<InitPlanSection> {
    let mut direct = Vec::new();
    let mut subplans = Vec::new();
    plan.for_each_expr(&mut |e| {
        e.for_each_node(&mut |n| {
            if let Expr::ScalarSubquery(init_plan) = n {
                direct.push(init_plan.clone());
            }
        });
        e.collect_subplans(&mut subplans);
    });
    let init_plans = all.iter().filter(|p| direct.iter().any(|d| Arc::ptr_eq(d, p))).map(|p| InitPlanSection {
        title: format!("InitPlan {} (returns ${})", p.number, p.param()),
        node: builder.plan(match &p.plan {
            // EXISTS's LIMIT 1 is no node of PostgreSQL's (it plans for the first row).
            Plan::Limit { input, .. } if p.exists => input,
            plan => plan,
        }).node,
        init_plans: init_plan_sections(builder, &p.plan, all),
    });
    let subplans = subplans.into_iter().map(|p| {
        let mut node = builder.plan(&p.plan).node;
        let args = builder.subplan_args.borrow().iter().find(|(n, _)| *n == p.number).map(|(_, a)| a.clone());
        if let Some(args) = args {
            rename_params(&mut node, &args);
        }
        InitPlanSection { title: format!("SubPlan {}", p.number), node, init_plans: init_plan_sections(builder, &p.plan, all) }
    });
    init_plans.collect::<Vec<_>>().into_iter().chain(subplans).collect()
}

/// Print parameter `$i` of a subplan or LATERAL item as `names[i]` (the outer column).
fn rename_params(node: &mut Node, names: &[String]) {
    for line in &mut node.lines {
        for (i, name) in names.iter().enumerate().rev() {
            *line = line.replace(&format!("${i}"), name);
        }
    }
    node.children.iter_mut().for_each(|c| rename_params(c, names));
}

/// [`render`], with the init plan sections after the node's properties and before its
/// children, as PostgreSQL prints them: the title at the properties' indent, the
/// subquery's tree as a child shifted two more spaces.
fn render_with_init_plans(node: &Node, sections: &[InitPlanSection], depth: usize, options: &ExplainOptions, out: &mut Vec<String>) {
    let mut lines = Vec::new();
    render(node, depth, options, &mut lines);
    let head = (1 + node.lines.len()).min(lines.len());
    let children = lines.split_off(head);
    out.extend(lines);
    for section in sections {
        out.push(format!("{}{}", " ".repeat(2 + 6 * depth), section.title));
        let mut sub = Vec::new();
        render_with_init_plans(&section.node, &section.init_plans, depth + 1, options, &mut sub);
        out.extend(sub.into_iter().map(|l| format!("  {l}")));
    }
    out.extend(children);
}

/// Move `predicate`'s pseudoconstant conjuncts to `gates`; the rest, if any, is returned.
fn split_gates(predicate: &Expr, gates: &mut Vec<Expr>) -> Option<Expr> {
    let (one_time, rest): (Vec<&Expr>, Vec<&Expr>) = predicate.conjuncts().into_iter().partition(|c| c.is_pseudoconstant());
    // A constant true (`LEFT JOIN ... ON true` filtering the nullable side) gates nothing:
    // PostgreSQL folds it away.
    let is_true = |c: &&Expr| matches!(c, Expr::Literal { value: Datum::Bool(true), .. });
    gates.extend(one_time.into_iter().filter(|c| !is_true(c)).cloned());
    rest.into_iter().cloned().reduce(crate::exprutil::and)
}

/// `node` under PostgreSQL's gating Result, whose One-Time Filter `gates` is evaluated
/// once (the executor's `never_passes`). One that is constant false is a dummy plan, as
/// PostgreSQL's: the Result alone, nothing under it.
fn gated(node: Node, gates: &[Expr]) -> Node {
    let Some(gate) = gates.iter().cloned().reduce(crate::exprutil::and) else { return node };
    let line = format!("One-Time Filter: {}", deparse(&gate, &[]));
    if gates.iter().any(|g| matches!(g, Expr::Literal { value: Datum::Bool(false) | Datum::Null, .. })) {
        let estimate = Estimate { startup: 0.0, total: 0.0, rows: 0.0, width: 0.0 };
        return Node { name: "Result".to_string(), estimate, actual: node.actual, lines: vec![line], children: Vec::new() };
    }
    Node { name: "Result".to_string(), estimate: node.estimate, actual: node.actual, lines: vec![line], children: vec![node] }
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// PostgreSQL's range-table entries of a plan: with more than one, column names are
/// printed qualified.
fn range_entries(plan: &Plan) -> usize {
    match plan {
        Plan::Pipeline(p) | Plan::Aggregate { input: p, .. } => pipeline_entries(p),
        Plan::Limit { input, .. } | Plan::Unique { input, .. } => range_entries(input),
        Plan::Sort(sort) => range_entries(&sort.input),
        Plan::Window(window) => range_entries(&window.input),
        Plan::ProjectSet(ps) => range_entries(&ps.input),
        Plan::SetOp(setop) => setop.inputs.iter().map(range_entries).sum(),
        Plan::NestLoop(nl) => range_entries(&nl.outer) + range_entries(&nl.inner),
        Plan::RecursiveUnion(ru) => range_entries(&ru.non_recursive) + range_entries(&ru.recursive),
    }
}

fn pipeline_entries(p: &Pipeline) -> usize {
    let source = match &p.source {
        Source::Single => 0,
        Source::Heap(_) | Source::Index(_) | Source::Series { .. } | Source::Values(_) => 1,
        Source::SeriesExprs { .. } | Source::WorkTable { .. } | Source::Unnest { .. } => 1,
        Source::Subquery { plan, .. } => 1 + range_entries(plan),
    };
    let joined: usize = p.steps.iter().map(|s| if let Step::HashJoin(j) = s { pipeline_entries(&j.inner) } else { 0 }).sum();
    source + joined
}

/// One node of the printed tree.
#[derive(Clone, Debug)]
pub struct Node {
    pub name: String,
    pub estimate: Estimate,
    /// With ANALYZE: what the node did; `None` prints `(never executed)`.
    pub actual: Option<Actual>,
    /// Property lines (`Filter: ...`, `Sort Key: ...`), in order.
    pub lines: Vec<String>,
    pub children: Vec<Node>,
}

/// A node's measured figures, per loop as PostgreSQL prints them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Actual {
    pub startup: Duration,
    pub total: Duration,
    pub rows: f64,
    pub loops: f64,
}

/// Print `node` and its children the way PostgreSQL's text format does: children as
/// `->  ` lines indented six more spaces per level, properties two spaces inside their
/// node's arrow.
pub fn render(node: &Node, depth: usize, options: &ExplainOptions, out: &mut Vec<String>) {
    let mut line = if depth == 0 { String::new() } else { format!("{}->  ", " ".repeat(6 * depth - 4)) };
    line.push_str(&node.name);
    if options.costs {
        let e = &node.estimate;
        line.push_str(&format!("  (cost={:.2}..{:.2} rows={:.0} width={})", e.startup, e.total, e.rows, e.width.round() as i64));
    }
    if options.analyze {
        match &node.actual {
            Some(a) if options.timing => line.push_str(&format!(
                " (actual time={:.3}..{:.3} rows={:.0} loops={:.0})",
                millis(a.startup),
                millis(a.total),
                a.rows,
                a.loops
            )),
            Some(a) => line.push_str(&format!(" (actual rows={:.0} loops={:.0})", a.rows, a.loops)),
            None => line.push_str(" (never executed)"),
        }
    }
    out.push(line);
    let indent = " ".repeat(2 + 6 * depth);
    for property in &node.lines {
        out.push(format!("{indent}{property}"));
    }
    for child in &node.children {
        render(child, depth + 1, options, out);
    }
}

/// A column of a node's output: its printed name (bare, and qualified by its scan's
/// name), average width, and distinct values when known exactly.
#[derive(Clone, Debug)]
struct Col {
    bare: ColumnText,
    qualified: ColumnText,
    width: f64,
    distinct: Option<f64>,
}

impl Col {
    fn name(&self, qualified: bool) -> &ColumnText {
        if qualified {
            &self.qualified
        } else {
            &self.bare
        }
    }
}

fn names(cols: &[Col], qualified: bool) -> Vec<ColumnText> {
    cols.iter().map(|c| c.name(qualified).clone()).collect()
}

/// A built subtree: its root node and the root's output columns.
struct Built {
    node: Node,
    cols: Vec<Col>,
}

/// A join node built over the rows so far.
struct JoinBuilt {
    node: Node,
    cols: Vec<Col>,
    /// Estimated rows out, over all participants.
    rows: f64,
}

/// `Buckets: N  Batches: N  Memory Usage: NkB`, as PostgreSQL 15's Hash node prints it:
/// both original figures when either changed during the run.
fn hash_usage_line(run: &HashJoinStats) -> String {
    let memory = run.peak_memory.div_ceil(1024);
    if run.buckets != run.original_buckets || run.batches != run.original_batches {
        format!(
            "Buckets: {} (originally {})  Batches: {} (originally {})  Memory Usage: {memory}kB",
            run.buckets, run.original_buckets, run.batches, run.original_batches
        )
    } else {
        format!("Buckets: {}  Batches: {}  Memory Usage: {memory}kB", run.buckets, run.batches)
    }
}

/// A pipeline's scan node (before any Gather above it).
struct Scan<'r> {
    node: Node,
    cols: Vec<Col>,
    /// Estimated rows out of the pipeline, over all participants.
    rows: f64,
    /// The parallel divisor (1 when serial).
    divisor: f64,
    stats: Option<&'r PipelineStats>,
}

struct Builder<'a> {
    catalog: &'a Catalog,
    options: ExplainOptions,
    /// More than one range-table entry: PostgreSQL then qualifies column names (`t.a`)
    /// in the sort keys, group keys, upper filters and VERBOSE output it prints; a scan's
    /// own filter is qualified only under VERBOSE or in a subquery scan.
    multiple_entries: bool,
    leader_participates: bool,
    work_mem: usize,
    run: Option<&'a RunStats>,
    /// Names given to scans so far: a name used twice gets `_1`, `_2` ... as
    /// PostgreSQL's `set_rtable_names` does (`INSERT INTO e SELECT * FROM e` scans `e e_1`).
    used_names: RefCell<Vec<String>>,
    /// `CTE name` sections of the recursive CTEs scanned so far (printed under the root,
    /// before the init plans), each once.
    ctes: RefCell<Vec<InitPlanSection>>,
    /// The recursive CTEs whose recursive union is being built, innermost last (what a
    /// working table scan is of).
    cte_names: RefCell<Vec<String>>,
    /// Per subplan (by number): its arguments as the node evaluating it names them
    /// (qualified), so that its parameters print as those outer columns, as in PostgreSQL.
    subplan_args: RefCell<Vec<(usize, Vec<String>)>>,
}

/// Per-loop averages over a pipeline's participants: time to the first row (or the end,
/// without rows) and to the end, each from the participant's start.
fn participant_actual(stats: &PipelineStats, rows: f64) -> Actual {
    let loops = stats.participants.len().max(1) as f64;
    let (mut startup, mut total) = (Duration::ZERO, Duration::ZERO);
    for p in &stats.participants {
        startup += p.first_row.unwrap_or(p.finished).saturating_sub(p.started);
        total += p.finished.saturating_sub(p.started);
    }
    Actual { startup: startup.div_f64(loops), total: total.div_f64(loops), rows: rows / loops, loops }
}

impl<'a> Builder<'a> {
    /// A unique name for a scan that would be called `name`.
    fn unique_name(&self, name: &str) -> String {
        let mut used = self.used_names.borrow_mut();
        let mut candidate = name.to_string();
        let mut n = 0;
        while used.contains(&candidate) {
            n += 1;
            candidate = format!("{name}_{n}");
        }
        used.push(candidate.clone());
        candidate
    }

    /// A column of scan `qualifier`.
    fn column(&self, qualifier: &str, name: &str, width: f64, distinct: Option<f64>) -> Col {
        Col {
            bare: ColumnText::var(column_reference(None, name)),
            qualified: ColumnText::var(column_reference(Some(qualifier), name)),
            width,
            distinct,
        }
    }

    /// A computed column, printed as `text` gives it for each naming.
    fn computed(&self, text: impl Fn(bool) -> String, data_type: DataType) -> Col {
        Col { bare: ColumnText::expr(text(false)), qualified: ColumnText::expr(text(true)), width: cost::type_width(data_type), distinct: None }
    }

    /// The column an expression over `input` produces.
    fn project(&self, expr: &Expr, input: &[Col]) -> Col {
        match expr {
            Expr::Column { index, .. } if *index < input.len() => input[*index].clone(),
            other => {
                self.note_subplans(other, input);
                self.computed(|q| deparse(other, &names(input, q)), other.data_type())
            }
        }
    }

    /// Record the arguments of the subplans `expr` (over `input`) evaluates.
    fn note_subplans(&self, expr: &Expr, input: &[Col]) {
        let mut found = Vec::new();
        expr.collect_subplans(&mut found);
        if found.is_empty() {
            return;
        }
        let qualified = names(input, true);
        expr.for_each_node(&mut |e| {
            if let Expr::SubPlan { subplan, args } = e {
                let mut known = self.subplan_args.borrow_mut();
                if !known.iter().any(|(n, _)| *n == subplan.number) {
                    known.push((subplan.number, args.iter().map(|a| deparse(a, &qualified)).collect()));
                }
            }
        });
    }

    /// Names in sort keys, group keys and the filters of upper nodes.
    fn upper_qualified(&self) -> bool {
        self.multiple_entries || self.options.verbose
    }

    fn output_line(&self, cols: &[Col]) -> Option<String> {
        self.options.verbose.then(|| {
            let names: Vec<&str> = cols.iter().map(|c| c.name(self.multiple_entries).text.as_str()).collect();
            format!("Output: {}", names.join(", "))
        })
    }

    fn node_stats(&self, plan: &Plan) -> Option<&'a NodeStats> {
        self.run.and_then(|r| r.node(plan))
    }

    fn plan(&self, plan: &'a Plan) -> Built {
        match plan {
            Plan::Pipeline(pipeline) => {
                let scan = self.scan(pipeline);
                if pipeline.workers == 0 {
                    Built { node: scan.node, cols: scan.cols }
                } else {
                    self.gather(scan, pipeline)
                }
            }
            Plan::Aggregate { input, group_by, aggregates, output } => self.aggregate(plan, input, group_by, aggregates, output),
            Plan::Limit { input, limit, offset, run_time, .. } => {
                let child = self.plan(input);
                // A count known only at run time is guessed as a tenth of the input's rows,
                // as PostgreSQL's `create_limit_path` does.
                let guess = || Some(cost::clamp_rows(child.node.estimate.rows * 0.1) as u64);
                let run_time_limit = run_time.as_ref().is_some_and(|r| r.limit.is_some());
                let run_time_offset = run_time.as_ref().is_some_and(|r| r.offset.is_some());
                let limit = if run_time_limit { guess() } else { *limit };
                let offset = if run_time_offset { guess().unwrap_or(0) } else { *offset };
                let estimate = cost::limit(&child.node.estimate, limit, offset);
                let actual = self.node_stats(plan).map(|s| Actual { startup: s.elapsed, total: s.elapsed, rows: s.rows as f64, loops: 1.0 });
                let lines = self.output_line(&child.cols).into_iter().collect();
                Built { node: Node { name: "Limit".into(), estimate, actual, lines, children: vec![child.node] }, cols: child.cols }
            }
            Plan::Sort(sort) => self.sort(plan, sort),
            Plan::Window(window) => self.window(plan, window),
            Plan::ProjectSet(ps) => self.project_set(plan, ps),
            Plan::SetOp(setop) => self.set_op(plan, setop),
            Plan::Unique { input, keys, output_width } => {
                let child = self.plan(input);
                // PostgreSQL's cost_unique: one comparison per key per input row. Its row
                // estimate is the number of distinct keys; weft keeps the input's.
                let c = child.node.estimate;
                let estimate = Estimate { total: c.total + c.rows * CPU_OPERATOR_COST * keys.len() as f64, ..c };
                let actual = self.node_stats(plan).map(|s| Actual { startup: s.elapsed, total: s.elapsed, rows: s.rows as f64, loops: 1.0 });
                let cols: Vec<Col> = child.cols.iter().take(*output_width).cloned().collect();
                let lines = self.output_line(&cols).into_iter().collect();
                Built { node: Node { name: "Unique".into(), estimate, actual, lines, children: vec![child.node] }, cols }
            }
            Plan::NestLoop(nl) => self.nest_loop(plan, nl),
            Plan::RecursiveUnion(ru) => {
                let first = self.plan(&ru.non_recursive);
                self.cte_names.borrow_mut().push(ru.name.clone());
                let rest = self.plan(&ru.recursive);
                self.cte_names.borrow_mut().pop();
                let (f, r) = (first.node.estimate, rest.node.estimate);
                // PostgreSQL guesses ten runs of the recursive term.
                let estimate = Estimate { startup: 0.0, total: f.total + 10.0 * r.total, rows: cost::clamp_rows(f.rows + 10.0 * r.rows), width: f.width };
                let actual = self.node_stats(plan).map(|s| Actual { startup: s.elapsed, total: s.elapsed, rows: s.rows as f64, loops: 1.0 });
                let lines = self.output_line(&first.cols).into_iter().collect();
                let node = Node { name: "Recursive Union".into(), estimate, actual, lines, children: vec![first.node, rest.node] };
                Built { node, cols: first.cols }
            }
        }
    }

    /// `Nested Loop` over a LATERAL item: the outer rows, and the inner plan run per row,
    /// whose parameters print as the outer columns they are.
    fn nest_loop(&self, plan: &'a Plan, nl: &'a weft_exec::plan::NestLoopPlan) -> Built {
        let outer = self.plan(&nl.outer);
        let mut inner = self.plan(&nl.inner);
        let param_names: Vec<String> = nl.params.iter().map(|p| deparse(p, &names(&outer.cols, true))).collect();
        rename_params(&mut inner.node, &param_names);
        let (o, i) = (outer.node.estimate, inner.node.estimate);
        let mut rows = o.rows * i.rows;
        let mut cols = outer.cols.clone();
        cols.extend(inner.cols.iter().cloned());
        let mut lines: Vec<String> = self.output_line(&cols).into_iter().collect();
        if let Some(filter) = &nl.filter {
            lines.push(format!("Join Filter: {}", deparse(filter, &names(&cols, true))));
            rows *= cost::selectivity(filter);
        }
        if nl.left {
            rows = rows.max(o.rows);
        }
        let estimate = Estimate {
            startup: o.startup + i.startup,
            total: o.total + o.rows * i.total + rows * CPU_TUPLE_COST,
            rows: cost::clamp_rows(rows),
            width: o.width + i.width,
        };
        let actual = self.node_stats(plan).map(|s| Actual { startup: s.elapsed, total: s.elapsed, rows: s.rows as f64, loops: 1.0 });
        let name = if nl.left { "Nested Loop Left Join" } else { "Nested Loop" };
        Built { node: Node { name: name.into(), estimate, actual, lines, children: vec![outer.node, inner.node] }, cols }
    }

    /// `Append` over the inputs; INTERSECT / EXCEPT add PostgreSQL's `HashSetOp` above it.
    fn set_op(&self, plan: &'a Plan, setop: &'a SetOpPlan) -> Built {
        let children: Vec<Built> = setop.inputs.iter().map(|input| self.plan(input)).collect();
        let rows: f64 = children.iter().map(|c| c.node.estimate.rows).sum();
        let estimate = Estimate {
            startup: children.first().map_or(0.0, |c| c.node.estimate.startup),
            total: children.iter().map(|c| c.node.estimate.total).sum(),
            rows,
            width: children.iter().map(|c| c.node.estimate.width).fold(0.0, f64::max),
        };
        let actual = self.node_stats(plan).map(|s| Actual { startup: s.elapsed, total: s.elapsed, rows: s.rows as f64, loops: 1.0 });
        let cols = children.first().map(|c| c.cols.clone()).unwrap_or_default();
        let children: Vec<Node> = children.into_iter().map(|c| c.node).collect();
        let name = match (setop.op, setop.all) {
            (SetOperator::Append, _) => {
                let lines = self.output_line(&cols).into_iter().collect();
                return Built { node: Node { name: "Append".into(), estimate, actual, lines, children }, cols };
            }
            (SetOperator::Intersect, false) => "HashSetOp Intersect",
            (SetOperator::Intersect, true) => "HashSetOp Intersect All",
            (SetOperator::Except, false) => "HashSetOp Except",
            (SetOperator::Except, true) => "HashSetOp Except All",
        };
        let append = Node { name: "Append".into(), estimate, actual: None, lines: Vec::new(), children };
        // Every input row is hashed once; the output is at most the left input.
        let left_rows = append.children.first().map_or(0.0, |c| c.estimate.rows);
        let total = append.estimate.total + rows * CPU_OPERATOR_COST * cols.len().max(1) as f64;
        let estimate = Estimate { startup: total, total: total + left_rows * CPU_TUPLE_COST, rows: cost::clamp_rows(left_rows), width: append.estimate.width };
        let lines = self.output_line(&cols).into_iter().collect();
        Built { node: Node { name: name.into(), estimate, actual, lines, children: vec![append] }, cols }
    }

    /// `Insert on t` above the plan of its rows.
    fn insert(&self, table: &str, child: Built) -> Built {
        let c = &child.node.estimate;
        let estimate = Estimate { startup: c.startup, total: c.total + c.rows * CPU_TUPLE_COST, rows: 0.0, width: 0.0 };
        let name = if self.options.verbose { format!("Insert on public.{}", quote_identifier(table)) } else { format!("Insert on {}", quote_identifier(table)) };
        Built { node: Node { name, estimate, actual: None, lines: Vec::new(), children: vec![child.node] }, cols: Vec::new() }
    }

    /// A heap's output columns, row estimate and printed relation (`t`, `public.t` with
    /// VERBOSE, then the alias if any).
    fn heap_scan(&self, heap: &HeapSource) -> (Vec<Col>, f64, String) {
        let table = self.catalog.tables.get(&heap.table_name);
        let row_count = table.map_or(0, |t| t.row_count);
        let mut widths = cost::heap_column_widths(heap.layout.types(), row_count, heap.nblocks);
        let tuples = cost::heap_tuples(row_count, heap.nblocks, widths.iter().sum());
        let rel = self.rel_stats(heap);
        // ANALYZE's average widths replace the measured ones for variable-length columns.
        for (c, width) in widths.iter_mut().enumerate() {
            if heap.layout.types()[c].fixed_width().is_none() {
                if let Some(s) = rel.table_column_stats(c) {
                    *width = s.avg_width.round().max(1.0);
                }
            }
        }
        let qualifier = self.unique_name(heap.label.alias.as_ref().unwrap_or(&heap.table_name));
        let cols = heap
            .columns
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let name = heap.label.columns.get(c).map_or("?column?", String::as_str);
                let distinct = rel.distinct(i, heap.layout.types()[c]);
                self.column(&qualifier, name, widths.get(c).copied().unwrap_or(0.0), distinct)
            })
            .collect();
        let table = quote_identifier(&heap.table_name);
        let mut relation = if self.options.verbose { format!("public.{table}") } else { table };
        if qualifier != heap.table_name {
            relation.push(' ');
            relation.push_str(&quote_identifier(&qualifier));
        }
        (cols, tuples, relation)
    }

    /// What is known about the columns of a scan of `heap`'s rows.
    fn rel_stats(&self, heap: &HeapSource) -> RelStats<'a> {
        match self.catalog.tables.get(&heap.table_name) {
            Some(table) => RelStats::for_table(self.catalog, table, &heap.columns),
            None => RelStats::none(),
        }
    }

    /// The scan node of a pipeline: its source, filters and projections.
    fn scan(&self, pipeline: &'a Pipeline) -> Scan<'a> {
        self.scan_with(pipeline, pipeline.workers)
    }

    /// The scan node of a pipeline run by `workers` workers besides the leader (a
    /// parallel-aware join's build side is run by the workers of the pipeline it is in).
    fn scan_with(&self, pipeline: &'a Pipeline, workers: usize) -> Scan<'a> {
        // A subquery the planner made up (a set operation's input, DISTINCT over groups)
        // that neither filters nor projects is not shown, as PostgreSQL removes trivial
        // subquery scans.
        if let (Source::Subquery { plan, label }, true, 0) = (&pipeline.source, pipeline.steps.is_empty(), workers) {
            if label.alias.is_none() {
                let child = self.plan(plan);
                let rows = child.node.estimate.rows;
                let stats = self.run.and_then(|r| r.pipeline(pipeline));
                return Scan { node: child.node, cols: child.cols, rows, divisor: 1.0, stats };
            }
        }
        let parallel = workers > 0;
        let divisor = if parallel { cost::parallel_divisor(workers, self.leader_participates) } else { 1.0 };
        let stats = self.run.and_then(|r| r.pipeline(pipeline));
        let mut children = Vec::new();
        let mut inlined_lines: Vec<String> = Vec::new();
        // Name, input columns, rows in, startup cost, cost not shared by participants
        // (pages), cost shared by them (per-row CPU).
        let mut index_cond = None;
        let (name, input, rows_in, startup, disk, mut cpu) = match &pipeline.source {
            Source::Single => ("Result".to_string(), Vec::new(), 1.0, 0.0, 0.0, CPU_TUPLE_COST),
            Source::Heap(heap) => {
                let (cols, tuples, relation) = self.heap_scan(heap);
                (format!("Seq Scan on {relation}"), cols, tuples, 0.0, heap.nblocks as f64 * SEQ_PAGE_COST, tuples * CPU_TUPLE_COST)
            }
            Source::Index(index) => {
                let (cols, _, relation) = self.heap_scan(&index.heap);
                let kind = if index.index_only { "Index Only Scan" } else { "Index Scan" };
                let backward = if index.direction == ScanDirection::Backward { " Backward" } else { "" };
                let name = format!("{kind}{backward} using {} on {relation}", quote_identifier(&index.index_name));
                let qualify = self.options.verbose;
                let conds: Vec<String> = index.conditions.iter().map(|c| deparse(c, &names(&cols, qualify))).collect();
                index_cond = match conds.len() {
                    0 => None,
                    1 => Some(conds[0].clone()),
                    _ => Some(format!("({})", conds.join(" AND "))),
                };
                let rows = index.estimated_rows.max(0.0);
                let startup = index.estimated_startup_cost;
                (name, cols, rows, startup, index.estimated_total_cost - startup, 0.0)
            }
            Source::Series { start, stop, step, data_type, label } => {
                let count = series_count(*start, *stop, *step);
                let qualifier = self.unique_name(label.alias.as_deref().unwrap_or("generate_series"));
                let column = label.columns.first().map_or("generate_series", String::as_str);
                let cols = vec![self.column(&qualifier, column, cost::type_width(*data_type), Some(count.max(1.0)))];
                let mut name = "Function Scan on generate_series".to_string();
                if qualifier != "generate_series" {
                    name.push(' ');
                    name.push_str(&quote_identifier(&qualifier));
                }
                (name, cols, count, 0.0, 0.0, count * CPU_TUPLE_COST)
            }
            Source::Values(rows) => {
                let n = rows.len() as f64;
                let ops: f64 = rows.iter().flatten().map(cost::operator_count).sum();
                // PostgreSQL's cost_valuesscan: an operator's worth per row for its expressions.
                let cpu = n * (CPU_TUPLE_COST + CPU_OPERATOR_COST) + ops * CPU_OPERATOR_COST;
                match rows.as_slice() {
                    [row] => {
                        let cols = row.iter().map(|e| self.project(e, &[])).collect();
                        ("Result".to_string(), cols, 1.0, 0.0, 0.0, cpu)
                    }
                    _ => {
                        let types: Vec<DataType> = rows.first().map(|r| r.iter().map(Expr::data_type).collect()).unwrap_or_default();
                        let qualifier = self.unique_name("*VALUES*");
                        let cols = types
                            .iter()
                            .enumerate()
                            .map(|(i, t)| self.column(&qualifier, &format!("column{}", i + 1), cost::type_width(*t), None))
                            .collect();
                        (format!("Values Scan on {}", quote_identifier(&qualifier)), cols, n, 0.0, 0.0, cpu)
                    }
                }
            }
            Source::SeriesExprs { data_type, label, .. } => {
                // PostgreSQL's default estimate for a function: 1000 rows.
                let count = 1000.0;
                let qualifier = self.unique_name(label.alias.as_deref().unwrap_or("generate_series"));
                let column = label.columns.first().map_or("generate_series", String::as_str);
                let cols = vec![self.column(&qualifier, column, cost::type_width(*data_type), None)];
                let mut name = "Function Scan on generate_series".to_string();
                if qualifier != "generate_series" {
                    name.push(' ');
                    name.push_str(&quote_identifier(&qualifier));
                }
                (name, cols, count, 0.0, 0.0, count * CPU_TUPLE_COST)
            }
            Source::Unnest { data_type, ordinality, label, .. } => {
                // PostgreSQL's estimate for unnest: 10 rows (its support function's).
                let count = 10.0;
                let qualifier = self.unique_name(label.alias.as_deref().unwrap_or("unnest"));
                let mut cols = vec![self.column(&qualifier, label.columns.first().map_or("unnest", String::as_str), cost::type_width(*data_type), None)];
                if *ordinality {
                    cols.push(self.column(&qualifier, label.columns.get(1).map_or("ordinality", String::as_str), 8.0, None));
                }
                let mut name = "Function Scan on unnest".to_string();
                if qualifier != "unnest" {
                    name.push(' ');
                    name.push_str(&quote_identifier(&qualifier));
                }
                (name, cols, count, 0.0, 0.0, count * CPU_TUPLE_COST)
            }
            Source::WorkTable { types, label, .. } => {
                let qualifier = self.unique_name(label.alias.as_deref().unwrap_or("worktable"));
                let cols = types
                    .iter()
                    .enumerate()
                    .map(|(i, t)| self.column(&qualifier, label.columns.get(i).map_or("?column?", String::as_str), cost::type_width(*t), None))
                    .collect();
                let rows = 100.0;
                let cte = self.cte_names.borrow().last().cloned().unwrap_or_else(|| qualifier.clone());
                let mut name = format!("WorkTable Scan on {}", quote_identifier(&cte));
                if qualifier != cte {
                    name.push(' ');
                    name.push_str(&quote_identifier(&qualifier));
                }
                (name, cols, rows, 0.0, 0.0, rows * CPU_TUPLE_COST)
            }
            Source::Subquery { plan, label } if matches!(plan.as_ref(), Plan::RecursiveUnion(_)) => {
                let Plan::RecursiveUnion(ru) = plan.as_ref() else { unreachable!("matched") };
                let alias = self.unique_name(label.alias.as_deref().unwrap_or(&ru.name));
                let child = self.plan(plan);
                let cols = child
                    .cols
                    .iter()
                    .enumerate()
                    .map(|(i, c)| self.column(&alias, label.columns.get(i).map_or("?column?", String::as_str), c.width, c.distinct))
                    .collect();
                let e = child.node.estimate;
                let title = format!("CTE {}", quote_identifier(&ru.name));
                let mut ctes = self.ctes.borrow_mut();
                if !ctes.iter().any(|s| s.title == title) {
                    ctes.push(InitPlanSection { title, node: child.node, init_plans: Vec::new() });
                }
                let mut name = format!("CTE Scan on {}", quote_identifier(&ru.name));
                if alias != ru.name {
                    name.push(' ');
                    name.push_str(&quote_identifier(&alias));
                }
                (name, cols, e.rows, e.startup, 0.0, e.total - e.startup + e.rows * CPU_TUPLE_COST)
            }
            Source::Subquery { plan, label } => {
                let alias = self.unique_name(label.alias.as_deref().unwrap_or("unnamed_subquery"));
                let child = self.plan(plan);
                let cols = child
                    .cols
                    .iter()
                    .enumerate()
                    .map(|(i, c)| self.column(&alias, label.columns.get(i).map_or("?column?", String::as_str), c.width, c.distinct))
                    .collect();
                let e = child.node.estimate;
                if label.alias.is_none() && matches!(plan.as_ref(), Plan::NestLoop(_)) {
                    // The join of a FROM clause with LATERAL items: its filters print on
                    // the join node, as PostgreSQL's would.
                    let node = child.node;
                    children.extend(node.children);
                    inlined_lines = node.lines;
                    (node.name, child.cols, e.rows, e.startup, 0.0, e.total - e.startup)
                } else if label.alias.is_none() && label.columns.is_empty() && matches!(plan.as_ref(), Plan::Sort(_)) {
                    // Output columns computed after a sort under a LIMIT (the planner's
                    // `postpone_subplans_past_sort`): PostgreSQL's Result node.
                    let cpu = e.rows * CPU_TUPLE_COST;
                    children.push(child.node);
                    ("Result".to_string(), child.cols, e.rows, e.startup, 0.0, e.total - e.startup + cpu)
                } else {
                children.push(child.node);
                let name = format!("Subquery Scan on {}", quote_identifier(&alias));
                (name, cols, e.rows, e.startup, 0.0, e.total - e.startup + e.rows * CPU_TUPLE_COST)
                }
            }
        };

        let mut cols = input;
        let mut rows = rows_in;
        let mut filters = Vec::new();
        let qualify_filter = self.options.verbose || matches!(pipeline.source, Source::Subquery { .. });
        // Column statistics apply to the table's columns, before any projection.
        let mut rel = match &pipeline.source {
            Source::Heap(heap) => self.rel_stats(heap),
            Source::Index(index) => self.rel_stats(&index.heap),
            _ => RelStats::none(),
        };
        let has_joins = pipeline.steps.iter().any(|s| matches!(s, Step::HashJoin(_)));
        let mut steps = pipeline.steps.iter();
        // The scan's own filters and projections, up to the first join; pseudoconstant
        // conjuncts gate it from a Result node above.
        let mut first_join = None;
        let mut scan_gates = Vec::new();
        for step in steps.by_ref() {
            match step {
                Step::Filter(predicate) => {
                    let Some(predicate) = split_gates(predicate, &mut scan_gates) else { continue };
                    let predicate = &predicate;
                    cpu += rows * cost::operator_count(predicate) * CPU_OPERATOR_COST;
                    self.note_subplans(predicate, &cols);
                    filters.push(deparse(predicate, &names(&cols, qualify_filter)));
                    rows *= selectivity::clauselist_selectivity(&predicate.conjuncts(), &rel);
                }
                Step::Project(exprs) => {
                    cpu += rows * exprs.iter().map(cost::operator_count).sum::<f64>() * CPU_OPERATOR_COST;
                    cols = exprs.iter().map(|e| self.project(e, &cols)).collect();
                    rel = RelStats::none();
                }
                Step::HashJoin(join) => {
                    first_join = Some(join);
                    break;
                }
            }
        }
        let estimate = Estimate {
            startup,
            total: startup + disk + cpu / divisor,
            rows: cost::clamp_rows(rows / divisor),
            width: cols.iter().map(|c| c.width).sum(),
        };
        let mut lines: Vec<String> = self.output_line(&cols).into_iter().collect();
        lines.append(&mut inlined_lines);
        // Below a join only the rows the source produced are known.
        let actual = stats.map(|s| participant_actual(s, if has_joins { s.rows_in() } else { s.rows_out() } as f64));
        if let Some(cond) = index_cond {
            lines.push(format!("Index Cond: {cond}"));
        }
        if !filters.is_empty() {
            let filter = if filters.len() == 1 { filters.remove(0) } else { format!("({})", filters.join(" AND ")) };
            lines.push(format!("Filter: {filter}"));
            if let (Some(s), false) = (stats, has_joins) {
                let loops = s.participants.len().max(1) as f64;
                lines.push(format!("Rows Removed by Filter: {:.0}", (s.rows_in() - s.rows_out()) as f64 / loops));
            }
        }
        if let (Source::Index(index), Some(s)) = (&pipeline.source, stats) {
            if index.index_only {
                lines.push(format!("Heap Fetches: {}", s.heap_fetches));
            }
        }
        let name = if parallel { format!("Parallel {name}") } else { name };
        let mut node = gated(Node { name, estimate, actual, lines, children }, &scan_gates);
        let Some(mut join) = first_join else {
            return Scan { node, cols, rows, divisor, stats };
        };
        // Each join takes the node so far as its outer child; the filters and
        // projections after it belong to it.
        loop {
            let built = self.hash_join(join, node, cols, rows, divisor, pipeline.workers);
            node = built.node;
            cols = built.cols;
            rows = built.rows;
            // A join runs in its pipeline's loops: their times are its times.
            if let (Some(s), Some(actual)) = (stats, node.actual.as_mut()) {
                let loop_times = participant_actual(s, 0.0);
                actual.startup = loop_times.startup;
                actual.total = loop_times.total;
            }
            let mut next = None;
            let mut after = Vec::new();
            let mut gates = Vec::new();
            for step in steps.by_ref() {
                match step {
                    Step::Filter(predicate) => {
                        let Some(predicate) = split_gates(predicate, &mut gates) else { continue };
                        let predicate = &predicate;
                        node.estimate.total += rows / divisor * cost::operator_count(predicate) * CPU_OPERATOR_COST;
                        self.note_subplans(predicate, &cols);
                        after.push(deparse(predicate, &names(&cols, true)));
                        rows *= cost::selectivity(predicate);
                        node.estimate.rows = cost::clamp_rows(rows / divisor);
                    }
                    Step::Project(exprs) => {
                        cols = exprs.iter().map(|e| self.project(e, &cols)).collect();
                        node.estimate.width = cols.iter().map(|c| c.width).sum();
                    }
                    Step::HashJoin(j) => {
                        next = Some(j);
                        break;
                    }
                }
            }
            if !after.is_empty() {
                let filter = if after.len() == 1 { after.remove(0) } else { format!("({})", after.join(" AND ")) };
                node.lines.push(format!("Filter: {filter}"));
            }
            node = gated(node, &gates);
            match next {
                Some(j) => join = j,
                None => break,
            }
        }
        if let (Some(s), Some(actual)) = (stats, node.actual.as_mut()) {
            let loops = s.participants.len().max(1) as f64;
            actual.rows = s.rows_out() as f64 / loops;
        }
        node.lines.splice(0..0, self.output_line(&cols));
        Scan { node, cols, rows, divisor, stats }
    }

    /// A `Hash Join` node over `outer` (the rows so far) and a `Hash` node over the join's
    /// build side.
    fn hash_join(&self, join: &'a HashJoin, outer: Node, outer_cols: Vec<Col>, outer_rows: f64, divisor: f64, workers: usize) -> JoinBuilt {
        let aware = join.mode == HashJoinMode::ParallelAware;
        let inner = self.scan_with(&join.inner, if aware { workers } else { 0 });
        let inner_total_rows = inner.rows;
        let mut cols = outer_cols.clone();
        if join.join_type.emits_inner_columns() {
            cols.extend(inner.cols.iter().cloned());
        }
        let qualified_outer = names(&outer_cols, true);
        let qualified_inner = names(&inner.cols, true);
        let conds: Vec<String> = join
            .outer_keys
            .iter()
            .zip(&join.inner_keys)
            .map(|(o, i)| format!("({} = {})", deparse(o, &qualified_outer), deparse(i, &qualified_inner)))
            .collect();
        let run = self.run.and_then(|r| r.join(join));
        // The hash node: the build side's scan, costed as PostgreSQL's cost_hashjoin
        // charges building (one operator per key per inner row).
        let keys = join.inner_keys.len().max(1) as f64;
        let hash_cost = inner_total_rows * (CPU_OPERATOR_COST * keys + CPU_TUPLE_COST);
        let hash_estimate = Estimate {
            startup: inner.node.estimate.total + hash_cost / if aware { divisor } else { 1.0 },
            total: inner.node.estimate.total + hash_cost / if aware { divisor } else { 1.0 },
            rows: inner.node.estimate.rows,
            width: inner.node.estimate.width,
        };
        let mut hash_lines: Vec<String> = self.output_line(&inner.cols).into_iter().collect();
        if let Some(run) = run {
            hash_lines.push(hash_usage_line(run));
            if run.batches > 1 {
                // Several batches: outer rows written to batch files, and the rows joined in
                // memory through skew buckets (the outer key's most common values).
                hash_lines.push(format!(
                    "Outer Rows Spilled: {}  Skew Rows: inner {}, outer {}",
                    run.outer_spilled, run.skew_inner_rows, run.skew_outer_rows
                ));
            }
        }
        let hash = Node {
            name: if aware { "Parallel Hash".into() } else { "Hash".into() },
            estimate: hash_estimate,
            actual: inner.node.actual,
            lines: hash_lines,
            children: vec![inner.node],
        };
        let key_distinct = |key: &Expr, cols: &[Col]| key_column(key).and_then(|(index, _)| cols.get(index)?.distinct);
        let key_distincts: Vec<KeyDistinct> = join
            .outer_keys
            .iter()
            .zip(&join.inner_keys)
            .map(|(o, i)| KeyDistinct { outer: key_distinct(o, &outer_cols), inner: key_distinct(i, &inner.cols) })
            .collect();
        let rows = join_rows(join.join_type, outer_rows, inner_total_rows, &key_distincts, join.filter.is_some());
        let startup = hash.estimate.total;
        let probe = outer_rows / divisor * CPU_OPERATOR_COST * keys + rows / divisor * CPU_TUPLE_COST;
        let estimate = Estimate {
            startup,
            total: outer.estimate.total + startup + probe,
            rows: cost::clamp_rows(rows / divisor),
            width: cols.iter().map(|c| c.width).sum(),
        };
        let mut lines = Vec::new();
        match conds.len() {
            0 => {}
            1 => lines.push(format!("Hash Cond: {}", conds[0])),
            _ => lines.push(format!("Hash Cond: ({})", conds.join(" AND "))),
        }
        if let Some(filter) = &join.filter {
            let mut both = names(&outer_cols, true);
            both.extend(names(&inner.cols, true));
            lines.push(format!("Join Filter: {}", deparse(filter, &both)));
        }
        let kind = match join.join_type {
            JoinType::Inner => "",
            JoinType::Left => " Left",
            JoinType::Right => " Right",
            JoinType::Full => " Full",
            JoinType::Semi => " Semi",
            JoinType::Anti => " Anti",
        };
        let name = format!("{}Hash{kind} Join", if aware { "Parallel " } else { "" });
        if let Some(run) = run {
            // weft's own lines: rows each participant emitted, and how long participants
            // waited at each barrier phase (min / median / max), which the seed measured
            // with dtrace.
            if run.rows_out.len() > 1 {
                let rows: Vec<String> = run.rows_out.iter().map(u64::to_string).collect();
                lines.push(format!("Rows per Participant: {}", rows.join(", ")));
            }
            // A multi-batch join passes the batch phases once per batch: one entry per
            // phase, over every participant's wait each time, says how many times.
            let mut phases: Vec<(&str, usize, Vec<Duration>)> = Vec::new();
            for w in run.phase_waits.iter().filter(|w| !w.waits.is_empty()) {
                match phases.iter_mut().find(|(phase, _, _)| *phase == w.phase) {
                    Some((_, times, waits)) => {
                        *times += 1;
                        waits.extend_from_slice(&w.waits);
                    }
                    None => phases.push((&w.phase, 1, w.waits.clone())),
                }
            }
            let waits: Vec<String> = phases
                .into_iter()
                .map(|(phase, times, mut waits)| {
                    waits.sort_unstable();
                    let median = waits[(waits.len() - 1) / 2];
                    let times = if times > 1 { format!(" ({times} times)") } else { String::new() };
                    format!(
                        "{phase}{times} {:.3}/{:.3}/{:.3}",
                        millis(waits[0]),
                        millis(median),
                        millis(waits[waits.len() - 1])
                    )
                })
                .collect();
            if !waits.is_empty() {
                lines.push(format!("Barrier Waits (min/median/max ms): {}", waits.join(", ")));
            }
        }
        let actual = run.map(|r| {
            let loops = r.rows_out.len().max(1) as f64;
            Actual { startup: Duration::ZERO, total: Duration::ZERO, rows: r.rows_out.iter().sum::<u64>() as f64 / loops, loops }
        });
        JoinBuilt { node: Node { name, estimate, actual, lines, children: vec![outer, hash] }, cols, rows }
    }

    fn workers_lines(&self, pipeline: &Pipeline, stats: Option<&PipelineStats>) -> Vec<String> {
        let mut lines = vec![format!("Workers Planned: {}", pipeline.workers)];
        if let Some(s) = stats {
            lines.push(format!("Workers Launched: {}", s.workers_launched));
        }
        lines
    }

    /// `Gather` above a parallel pipeline's scan.
    fn gather(&self, scan: Scan, pipeline: &Pipeline) -> Built {
        let child = scan.node.estimate;
        let estimate = Estimate {
            startup: child.startup + PARALLEL_SETUP_COST,
            total: child.total + PARALLEL_SETUP_COST + PARALLEL_TUPLE_COST * scan.rows,
            rows: cost::clamp_rows(scan.rows),
            width: child.width,
        };
        let mut lines: Vec<String> = self.output_line(&scan.cols).into_iter().collect();
        lines.extend(self.workers_lines(pipeline, scan.stats));
        let actual = scan.stats.map(|s| Actual {
            startup: s.participants.iter().filter_map(|p| p.first_row).min().unwrap_or(s.wall),
            total: s.wall,
            rows: s.rows_out() as f64,
            loops: 1.0,
        });
        Built { node: Node { name: "Gather".into(), estimate, actual, lines, children: vec![scan.node] }, cols: scan.cols }
    }

    fn aggregate(
        &self,
        plan: &Plan,
        input: &'a Pipeline,
        group_by: &[Expr],
        aggregates: &[weft_exec::AggregateCall],
        output: &[Step],
    ) -> Built {
        let scan = self.scan(input);
        let grouped = !group_by.is_empty();
        let key_cols: Vec<Col> = group_by.iter().map(|g| self.project(g, &scan.cols)).collect();
        let key_names = names(&scan.cols, self.upper_qualified());
        let group_key = grouped.then(|| {
            format!("Group Key: {}", group_by.iter().map(|g| deparse(g, &key_names)).collect::<Vec<_>>().join(", "))
        });
        let mut cols = key_cols.clone();
        cols.extend(aggregates.iter().map(|a| self.computed(|q| aggregate_call(a, &names(&scan.cols, q)), a.result_type)));
        let partial_width: f64 = cols.iter().map(|c| c.width).sum();
        let groups = if grouped {
            let product: f64 = key_cols.iter().map(|c| c.distinct.unwrap_or(cost::DEFAULT_NUM_DISTINCT)).product();
            cost::clamp_rows(product.min(scan.rows))
        } else {
            1.0
        };
        let arg_ops: f64 = aggregates.iter().flat_map(AggregateCall::exprs).map(cost::operator_count).sum();
        let key_ops: f64 = group_by.iter().map(cost::operator_count).sum();
        // Per input row: each aggregate's transition, its arguments; grouping hashes the keys.
        let per_row = (aggregates.len() as f64 + arg_ops + if grouped { group_by.len() as f64 + key_ops } else { 0.0 }) * CPU_OPERATOR_COST;

        // HAVING and the select list, over the groups.
        let mut having = Vec::new();
        let mut selectivity = 1.0;
        let mut output_ops = 0.0;
        for step in output {
            match step {
                Step::Filter(predicate) => {
                    self.note_subplans(predicate, &cols);
                    having.push(deparse(predicate, &names(&cols, self.upper_qualified())));
                    selectivity *= cost::selectivity(predicate);
                    output_ops += cost::operator_count(predicate);
                }
                Step::Project(exprs) => {
                    output_ops += exprs.iter().map(cost::operator_count).sum::<f64>();
                    cols = exprs.iter().map(|e| self.project(e, &cols)).collect();
                }
                // The planner puts joins in pipelines only; an aggregate's output has none.
                Step::HashJoin(_) => {}
            }
        }
        let rows = cost::clamp_rows(groups * selectivity);
        let per_group = CPU_TUPLE_COST + output_ops * CPU_OPERATOR_COST;
        let width: f64 = cols.iter().map(|c| c.width).sum();
        let kind = if grouped { "HashAggregate" } else { "Aggregate" };
        let stats = self.node_stats(plan);

        let mut lines: Vec<String> = self.output_line(&cols).into_iter().collect();
        lines.extend(group_key.clone());
        if !having.is_empty() {
            let filter = if having.len() == 1 { having.remove(0) } else { format!("({})", having.join(" AND ")) };
            lines.push(format!("Filter: {filter}"));
            if let Some(s) = stats {
                lines.push(format!("Rows Removed by Filter: {}", s.groups.saturating_sub(s.rows)));
            }
        }
        // PostgreSQL's `Batches: N  Memory Usage: NkB  [Disk Usage: NkB]` of a hash aggregate.
        if let (true, Some(spill)) = (grouped, stats.and_then(|s| s.spill.as_ref())) {
            lines.push(spill.explain_line());
        }
        let actual = stats.map(|s| Actual { startup: s.elapsed, total: s.elapsed, rows: s.rows as f64, loops: 1.0 });

        if input.workers == 0 {
            let startup = scan.node.estimate.total + per_row * scan.rows;
            let estimate = Estimate { startup, total: startup + groups * per_group, rows, width };
            return Built { node: Node { name: kind.into(), estimate, actual, lines, children: vec![scan.node] }, cols };
        }

        // Partial aggregates in every participant, gathered, finalized by the leader.
        let per_participant_rows = scan.rows / scan.divisor;
        let partial_groups = if grouped { cost::clamp_rows(groups.min(per_participant_rows)) } else { 1.0 };
        let partial_startup = scan.node.estimate.total + per_row * per_participant_rows;
        let partial_estimate = Estimate { startup: partial_startup, total: partial_startup + partial_groups * CPU_TUPLE_COST, rows: partial_groups, width: partial_width };
        let partial_actual = match (scan.stats, stats) {
            (Some(p), Some(s)) => Some(participant_actual(p, s.partial_groups as f64)),
            _ => None,
        };
        let partial_lines = group_key.clone().into_iter().collect();
        let partial = Node {
            name: format!("Partial {kind}"),
            estimate: partial_estimate,
            actual: partial_actual,
            lines: partial_lines,
            children: vec![scan.node],
        };

        let participants = (input.workers + self.leader_participates as usize).max(1) as f64;
        let gather_rows = partial_groups * participants;
        let gather_estimate = Estimate {
            startup: partial_estimate.startup + PARALLEL_SETUP_COST,
            total: partial_estimate.total + PARALLEL_SETUP_COST + PARALLEL_TUPLE_COST * gather_rows,
            rows: gather_rows,
            width: partial_width,
        };
        let gather_actual = match (scan.stats, stats) {
            (Some(p), Some(s)) => Some(Actual {
                startup: p.participants.iter().map(|q| q.finished).min().unwrap_or(p.wall),
                total: p.wall,
                rows: s.partial_groups as f64,
                loops: 1.0,
            }),
            _ => None,
        };
        let gather = Node {
            name: "Gather".into(),
            estimate: gather_estimate,
            actual: gather_actual,
            lines: self.workers_lines(input, scan.stats),
            children: vec![partial],
        };

        let combine = (aggregates.len() as f64 + if grouped { group_by.len() as f64 } else { 0.0 }) * CPU_OPERATOR_COST;
        let startup = gather_estimate.total + combine * gather_rows;
        let estimate = Estimate { startup, total: startup + groups * per_group, rows, width };
        Built { node: Node { name: format!("Finalize {kind}"), estimate, actual, lines, children: vec![gather] }, cols }
    }

    /// `ProjectSet` over its input: PostgreSQL's row estimate is the input's times the
    /// largest set (a constant series' or array's length, else the function's `prorows`:
    /// 1000 for generate_series, 100 for unnest), and a tuple cost per output row.
    fn project_set(&self, plan: &Plan, ps: &'a weft_exec::ProjectSetPlan) -> Built {
        use weft_exec::SetFunction;
        let child = self.plan(&ps.input);
        let c = child.node.estimate;
        let set_rows = |f: &SetFunction| -> f64 {
            let constant = |e: &Expr| match e {
                Expr::Literal { value, .. } => Some(value.clone()),
                _ => None,
            };
            match f {
                SetFunction::Series { args, .. } => {
                    let ints: Option<Vec<i64>> = args.iter().map(|a| match constant(a)? {
                        Datum::Int4(v) => Some(v as i64),
                        Datum::Int8(v) => Some(v),
                        _ => None,
                    }).collect();
                    match ints.as_deref() {
                        // The rows the executor will produce (a zero step is its error: guessed).
                        Some([start, stop, rest @ ..]) => weft_exec::execute::series_count(*start, *stop, rest.first().copied().unwrap_or(1)).map_or(1000.0, |n| n as f64),
                        _ => 1000.0,
                    }
                }
                SetFunction::Unnest { array, .. } => match constant(array) {
                    Some(Datum::Array(a)) => a.items.len() as f64,
                    _ => 100.0,
                },
            }
        };
        let most = ps.functions.iter().map(set_rows).fold(1.0f64, f64::max);
        let mut cols = child.cols.clone();
        for function in &ps.functions {
            let text = |q: bool| {
                let input = names(&child.cols, q);
                format!("{}({})", function.name(), function.args().iter().map(|a| deparse(a, &input)).collect::<Vec<_>>().join(", "))
            };
            cols.push(self.computed(text, function.result_type()));
        }
        let set_columns = cols.clone();
        // PostgreSQL computes an expression over a set's values (`generate_series(1, 3) * 2`)
        // in a Result above the ProjectSet.
        let mut result_ops = 0.0;
        for step in &ps.output {
            if let Step::Project(exprs) = step {
                for e in exprs.iter().filter(|e| !matches!(e, Expr::Column { .. })) {
                    let mut read = std::collections::BTreeSet::new();
                    crate::exprutil::columns_used(e, &mut read);
                    if read.range(child.cols.len()..).next().is_some() {
                        result_ops += cost::operator_count(e).max(1.0);
                    }
                }
                cols = exprs.iter().map(|e| self.project(e, &cols)).collect();
            }
        }
        let rows = cost::clamp_rows(c.rows * most);
        // PostgreSQL's `create_set_projection_path`: the functions' cost per input row, and
        // half a tuple cost per row added.
        let per_input_row = ps.functions.len() as f64 * 5.0 * CPU_OPERATOR_COST;
        let total = c.total + c.rows * per_input_row + (rows - c.rows).max(0.0) * CPU_TUPLE_COST / 2.0;
        let estimate = Estimate { startup: c.startup, total, rows, width: cols.iter().map(|c| c.width).sum() };
        let actual = self.node_stats(plan).map(|s| Actual { startup: s.elapsed, total: s.elapsed, rows: s.rows as f64, loops: 1.0 });
        if result_ops > 0.0 {
            let width = set_columns.iter().map(|c| c.width).sum();
            let lines = self.output_line(&set_columns).into_iter().collect();
            let set = Node { name: "ProjectSet".into(), estimate: Estimate { width, ..estimate }, actual, lines, children: vec![child.node] };
            let estimate = Estimate { total: total + rows * result_ops * CPU_OPERATOR_COST, ..estimate };
            let lines = self.output_line(&cols).into_iter().collect();
            return Built { node: Node { name: "Result".into(), estimate, actual, lines, children: vec![set] }, cols };
        }
        let lines = self.output_line(&cols).into_iter().collect();
        Built { node: Node { name: "ProjectSet".into(), estimate, actual, lines, children: vec![child.node] }, cols }
    }

    /// `WindowAgg` over its input (PostgreSQL's `cost_windowagg`: per input row, each
    /// function and its arguments, a comparison per partition and ordering key, and the
    /// row itself). Its columns are the input's and the functions' values, then the
    /// node's output steps.
    fn window(&self, plan: &Plan, window: &'a WindowPlan) -> Built {
        let child = self.plan(&window.input);
        let c = child.node.estimate;
        let arg_ops: f64 = window.functions.iter().flat_map(|f| f.args.iter()).map(cost::operator_count).sum();
        let keys = (window.partition_by.len() + window.order_by.len()) as f64;
        let per_row = (window.functions.len() as f64 + arg_ops + keys) * CPU_OPERATOR_COST + CPU_TUPLE_COST;
        let mut cols = child.cols.clone();
        for call in &window.functions {
            let text = |q: bool| {
                let input = names(&child.cols, q);
                let called = match &call.function {
                    WindowFunction::Aggregate(aggregate) => aggregate_call(aggregate, &input),
                    f => format!("{}({})", f.name(), call.args.iter().map(|a| deparse(a, &input)).collect::<Vec<_>>().join(", ")),
                };
                format!("{called} OVER (?)")
            };
            cols.push(self.computed(text, call.result_type));
        }
        for step in &window.output {
            if let Step::Project(exprs) = step {
                cols = exprs.iter().map(|e| self.project(e, &cols)).collect();
                // PostgreSQL's top window node also returns the windows' keys that the
                // select list does not (resjunk target entries).
                for key in &Self::window_keys_of(window, &child.cols) {
                    let key_text = |c: &Col| c.bare.text.clone();
                    if !cols.iter().any(|c| key_text(c) == key_text(key)) {
                        cols.push(key.clone());
                    }
                }
            }
        }
        let estimate = Estimate { startup: c.startup, total: c.total + c.rows * per_row, rows: c.rows, width: cols.iter().map(|c| c.width).sum() };
        let actual = self.node_stats(plan).map(|s| Actual { startup: s.elapsed, total: s.elapsed, rows: s.rows as f64, loops: 1.0 });
        let lines = self.output_line(&cols).into_iter().collect();
        Built { node: Node { name: "WindowAgg".into(), estimate, actual, lines, children: vec![child.node] }, cols }
    }

    /// The columns the partition and ordering keys of `window` and the window nodes below
    /// it read, bottom node first. Every node below only appended columns to the same
    /// input (`window.rs`), so `input` (the top node's input columns) names them all.
    fn window_keys_of(window: &WindowPlan, input: &[Col]) -> Vec<Col> {
        let mut chain = vec![window];
        let mut below = window.input.as_ref();
        loop {
            match below {
                Plan::Window(node) => {
                    chain.push(node);
                    below = node.input.as_ref();
                }
                Plan::Sort(sort) => below = sort.input.as_ref(),
                _ => break,
            }
        }
        let columns = chain.iter().rev().flat_map(|node| node.partition_by.iter().copied().chain(node.order_by.iter().map(|k| k.column)));
        columns.filter_map(|c| input.get(c).cloned()).collect()
    }

    fn sort_key_line(&self, sort: &SortPlan, cols: &[Col]) -> String {
        let keys: Vec<String> = sort
            .keys
            .iter()
            .map(|k| {
                let mut text = cols.get(k.column).map_or_else(|| format!("${}", k.column + 1), |c| c.name(self.upper_qualified()).referenced());
                if k.descending {
                    text.push_str(" DESC");
                    if !k.nulls_first {
                        text.push_str(" NULLS LAST");
                    }
                } else if k.nulls_first {
                    text.push_str(" NULLS FIRST");
                }
                text
            })
            .collect();
        format!("Sort Key: {}", keys.join(", "))
    }

    /// `Sort Method:` from the sort's report, and a line per worker when participants
    /// sorted in parallel (`workers_launched` tells whether the leader took part).
    fn sort_method_lines(&self, stats: Option<&NodeStats>, workers_launched: Option<usize>) -> Vec<String> {
        let Some(run) = self.run else { return Vec::new() };
        let Some(report) = stats.and_then(|s| s.sort_report).and_then(|i| run.sort_reports.get(i)) else {
            return Vec::new();
        };
        let mut lines = vec![report.explain_line()];
        if report.participants.len() > 1 {
            let leader_ran = run.leader_participates || workers_launched == Some(0);
            let first_worker = leader_ran as usize;
            for p in &report.participants {
                if p.index >= first_worker {
                    lines.push(format!(
                        "Worker {}:  Sort Method: {}  {}: {}kB",
                        p.index - first_worker,
                        p.method.name(),
                        p.space.name(),
                        p.space_bytes.div_ceil(1024)
                    ));
                }
            }
        }
        lines
    }

    fn sort(&self, plan: &Plan, sort: &'a SortPlan) -> Built {
        let stats = self.node_stats(plan);
        let bound = sort.bound.map(|b| b as f64);
        match sort.input.as_ref() {
            Plan::Pipeline(pipeline) if pipeline.workers > 0 => {
                let scan = self.scan(pipeline);
                let width = scan.node.estimate.width;
                let per_participant = scan.rows / scan.divisor;
                let (startup, total) = cost::sort_cost(&scan.node.estimate, per_participant, width, bound, self.work_mem);
                // As in PostgreSQL, a bound makes the sort cheaper but leaves its row estimate
                // alone: the Limit above takes its fraction.
                let sort_rows = cost::clamp_rows(per_participant);
                let out_cols: Vec<Col> = scan.cols.iter().take(sort.output_width).cloned().collect();
                let mut sort_lines: Vec<String> = self.output_line(&scan.cols).into_iter().collect();
                sort_lines.push(self.sort_key_line(sort, &scan.cols));
                sort_lines.extend(self.sort_method_lines(stats, scan.stats.map(|s| s.workers_launched)));
                let sort_actual = match (scan.stats, stats) {
                    (Some(p), Some(s)) => {
                        let loops = p.participants.len().max(1) as f64;
                        let rows: u64 = p.participants.iter().map(|q| sort.bound.map_or(q.rows_out, |b| q.rows_out.min(b))).sum();
                        Some(Actual { startup: p.wall, total: s.elapsed, rows: rows as f64 / loops, loops })
                    }
                    _ => None,
                };
                let sort_node = Node {
                    name: "Sort".into(),
                    estimate: Estimate { startup, total, rows: sort_rows, width },
                    actual: sort_actual,
                    lines: sort_lines,
                    children: vec![scan.node],
                };
                // PostgreSQL's cost_gather_merge: a heap over the participants' streams.
                let participants = (pipeline.workers + self.leader_participates as usize).max(1) as f64;
                let log_p = participants.max(2.0).log2();
                let comparison = 2.0 * CPU_OPERATOR_COST;
                let rows = cost::clamp_rows(scan.rows);
                let heap_build = comparison * participants * log_p;
                let estimate = Estimate {
                    startup: startup + PARALLEL_SETUP_COST + heap_build,
                    total: total + PARALLEL_SETUP_COST + heap_build + rows * (comparison * log_p + CPU_OPERATOR_COST + 1.05 * PARALLEL_TUPLE_COST),
                    rows,
                    width,
                };
                let mut lines: Vec<String> = self.output_line(&out_cols).into_iter().collect();
                lines.extend(self.workers_lines(pipeline, scan.stats));
                let actual = match (scan.stats, stats) {
                    (Some(p), Some(s)) => Some(Actual { startup: p.wall, total: s.elapsed, rows: s.rows as f64, loops: 1.0 }),
                    _ => None,
                };
                Built { node: Node { name: "Gather Merge".into(), estimate, actual, lines, children: vec![sort_node] }, cols: out_cols }
            }
            input => {
                let child = self.plan(input);
                let c = child.node.estimate;
                let (startup, total) = cost::sort_cost(&c, c.rows, c.width, bound, self.work_mem);
                let rows = c.rows;
                let out_cols: Vec<Col> = child.cols.iter().take(sort.output_width).cloned().collect();
                let mut lines: Vec<String> = self.output_line(&out_cols).into_iter().collect();
                lines.push(self.sort_key_line(sort, &child.cols));
                let input_stats = match input {
                    Plan::Pipeline(p) => self.run.and_then(|r| r.pipeline(p)),
                    _ => None,
                };
                lines.extend(self.sort_method_lines(stats, input_stats.map(|s| s.workers_launched)));
                // The sort's first row is ready when its input has ended.
                let input_elapsed = match input {
                    Plan::Pipeline(_) => input_stats.map(|s| s.wall),
                    other => self.node_stats(other).map(|s| s.elapsed),
                };
                let actual = stats.map(|s| Actual { startup: input_elapsed.unwrap_or(s.elapsed), total: s.elapsed, rows: s.rows as f64, loops: 1.0 });
                let estimate = Estimate { startup, total, rows, width: out_cols.iter().map(|c| c.width).sum() };
                Built { node: Node { name: "Sort".into(), estimate, actual, lines, children: vec![child.node] }, cols: out_cols }
            }
        }
    }
}

/// How many values `generate_series(start, stop, step)` yields (0 for a zero step, which
/// fails at run time).
fn series_count(start: i64, stop: i64, step: i64) -> f64 {
    if step == 0 {
        return 0.0;
    }
    let span = stop as i128 - start as i128;
    if (span > 0 && step < 0) || (span < 0 && step > 0) {
        return 0.0;
    }
    (span / step as i128 + 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, lines: &[&str], children: Vec<Node>) -> Node {
        Node {
            name: name.into(),
            estimate: Estimate { startup: 0.0, total: 0.43, rows: 10.0, width: 12.0 },
            actual: None,
            lines: lines.iter().map(|l| l.to_string()).collect(),
            children,
        }
    }

    #[test]
    fn renders_the_postgres_tree_layout() {
        let scan = node("Parallel Seq Scan on parallel_sort_test", &["Filter: (a > 5)"], vec![]);
        let sort = node("Sort", &["Sort Key: randint"], vec![scan]);
        let gather = node("Gather Merge", &["Workers Planned: 1"], vec![sort]);
        let limit = node("Limit", &[], vec![gather]);
        let mut out = Vec::new();
        render(&limit, 0, &ExplainOptions::default(), &mut out);
        assert_eq!(
            out,
            vec![
                "Limit  (cost=0.00..0.43 rows=10 width=12)",
                "  ->  Gather Merge  (cost=0.00..0.43 rows=10 width=12)",
                "        Workers Planned: 1",
                "        ->  Sort  (cost=0.00..0.43 rows=10 width=12)",
                "              Sort Key: randint",
                "              ->  Parallel Seq Scan on parallel_sort_test  (cost=0.00..0.43 rows=10 width=12)",
                "                    Filter: (a > 5)",
            ]
        );
        let mut out = Vec::new();
        render(&limit, 0, &ExplainOptions { costs: false, ..ExplainOptions::default() }, &mut out);
        assert_eq!(out[0], "Limit");
        assert_eq!(out[3], "        ->  Sort");
    }

    #[test]
    fn renders_actuals_timing_and_never_executed() {
        let mut scan = node("Seq Scan on t", &[], vec![]);
        scan.actual = Some(Actual { startup: Duration::from_micros(12), total: Duration::from_micros(1500), rows: 100.0, loops: 3.0 });
        let sort = node("Sort", &[], vec![scan]);
        let options = ExplainOptions { analyze: true, timing: true, summary: true, ..ExplainOptions::default() };
        let mut out = Vec::new();
        render(&sort, 0, &options, &mut out);
        assert_eq!(out[0], "Sort  (cost=0.00..0.43 rows=10 width=12) (never executed)");
        assert_eq!(out[1], "  ->  Seq Scan on t  (cost=0.00..0.43 rows=10 width=12) (actual time=0.012..1.500 rows=100 loops=3)");
        let mut out = Vec::new();
        render(&sort, 0, &ExplainOptions { costs: false, timing: false, ..options }, &mut out);
        assert_eq!(out[1], "  ->  Seq Scan on t (actual rows=100 loops=3)");
    }

    fn explain_options(sql: &str) -> Result<ExplainOptions> {
        let statements = sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, sql).unwrap();
        match &statements[0] {
            Statement::Explain { analyze, verbose, format, options, .. } => parse_options(*analyze, *verbose, format.as_ref(), options.as_deref()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn options_parse_as_postgres_does() {
        let o = explain_options("EXPLAIN SELECT 1").unwrap();
        assert!(!o.analyze && !o.verbose && o.costs && !o.summary);
        let o = explain_options("EXPLAIN ANALYZE SELECT 1").unwrap();
        assert!(o.analyze && o.timing && o.summary && o.costs);
        let o = explain_options("EXPLAIN (ANALYZE, COSTS OFF, TIMING false, SUMMARY off) SELECT 1").unwrap();
        assert!(o.analyze && !o.costs && !o.timing && !o.summary);
        let o = explain_options("EXPLAIN (ANALYZE 0, VERBOSE true, FORMAT TEXT) SELECT 1").unwrap();
        assert!(!o.analyze && o.verbose);
        assert_eq!(explain_options("EXPLAIN (TIMING) SELECT 1").unwrap_err().message, "EXPLAIN option TIMING requires ANALYZE");
        assert_eq!(explain_options("EXPLAIN (FOO) SELECT 1").unwrap_err().message, "unrecognized EXPLAIN option \"foo\"");
        assert_eq!(explain_options("EXPLAIN (COSTS maybe) SELECT 1").unwrap_err().message, "costs requires a Boolean value");
        assert_eq!(explain_options("EXPLAIN (FORMAT JSON) SELECT 1").unwrap_err().sqlstate, SqlState::FEATURE_NOT_SUPPORTED);
    }
}
