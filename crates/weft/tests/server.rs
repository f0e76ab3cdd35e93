//! `weft serve` end to end: the real binary on a free port, reached by `tokio-postgres`, by
//! a few raw protocol messages (ReadyForQuery's transaction status, which drivers hide) and
//! by psql 15 when it is installed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio_postgres::error::ErrorPosition;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

const PSQL: &str = "/usr/lib/postgresql/15/bin/psql";

/// A running `weft serve`; killed if a test fails before stopping it.
pub(crate) struct Server {
    child: Child,
    pub(crate) port: u16,
}

impl Server {
    pub(crate) fn start(dir: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_weft"))
            .args(["serve", "--port", "0", "-D"])
            .arg(dir)
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("start weft serve");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let port = loop {
            line.clear();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "weft serve exited before listening");
            if let Some(rest) = line.split("listening on ").nth(1) {
                let address = rest.split_whitespace().next().unwrap();
                break address.rsplit(':').next().unwrap().parse().unwrap();
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Server { child, port }
    }

    async fn connect(&self) -> Client {
        let config = format!("host=127.0.0.1 port={} user=postgres dbname=postgres", self.port);
        let (client, connection) = tokio_postgres::connect(&config, NoTls).await.expect("connect");
        tokio::spawn(connection);
        client
    }

    /// SIGTERM, then the exit status must be 0.
    pub(crate) fn stop(mut self) {
        let status = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        assert!(status.success());
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "weft serve exited with {status}");
                return;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "weft serve did not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn data_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    (dir, data)
}

/// The text values of a simple query's rows.
async fn rows(client: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    client
        .simple_query(sql)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|message| match message {
            SimpleQueryMessage::Row(row) => Some((0..row.len()).map(|i| row.get(i).map(str::to_string)).collect()),
            _ => None,
        })
        .collect()
}

fn db_error(error: &tokio_postgres::Error) -> &tokio_postgres::error::DbError {
    error.as_db_error().unwrap_or_else(|| panic!("not a server error: {error:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_type_round_trips_as_text() {
    let (_dir, data) = data_dir();
    let server = Server::start(&data);
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE t (b bool, i int, l bigint, f float8, n numeric, s text, d date, tm time, ts timestamp, tz timestamptz, iv interval);
             INSERT INTO t VALUES (true, 1, 9000000000, 0.1, 12.50, 'héllo', '2024-02-29', '13:45:00.5', '2024-02-29 13:45:00', '2024-02-29 13:45:00+00', '1 day 02:00:00');
             INSERT INTO t VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
        )
        .await
        .unwrap();
    let got = rows(&client, "SELECT * FROM t ORDER BY i").await;
    let expected: Vec<Option<String>> = [
        "t", "1", "9000000000", "0.1", "12.50", "héllo", "2024-02-29", "13:45:00.5", "2024-02-29 13:45:00", "2024-02-29 13:45:00+00", "1 day 02:00:00",
    ]
    .iter()
    .map(|s| Some(s.to_string()))
    .collect();
    assert_eq!(got, vec![expected, vec![None; 11]]);
    // Describe reports each column's type OID.
    let statement = client.prepare("SELECT * FROM t").await.unwrap();
    let oids: Vec<u32> = statement.columns().iter().map(|c| c.type_().oid()).collect();
    assert_eq!(oids, [16, 23, 20, 701, 1700, 25, 1082, 1083, 1114, 1184, 1186]);
    let names: Vec<&str> = statement.columns().iter().map(|c| c.name()).collect();
    assert_eq!(names, ["b", "i", "l", "f", "n", "s", "d", "tm", "ts", "tz", "iv"]);
    // Binary results of the simple types, as a driver reads them.
    let row = client.query_one("SELECT b, i, l, f, s FROM t WHERE i = 1", &[]).await.unwrap();
    assert!(row.get::<_, bool>(0));
    assert_eq!(row.get::<_, i32>(1), 1);
    assert_eq!(row.get::<_, i64>(2), 9_000_000_000);
    assert_eq!(row.get::<_, f64>(3), 0.1);
    assert_eq!(row.get::<_, &str>(4), "héllo");
    let row = client.query_one("SELECT ts, tz FROM t WHERE i = $1", &[&1i32]).await.unwrap();
    let at = std::time::UNIX_EPOCH + Duration::from_secs(1_709_214_300);
    assert_eq!((row.get::<_, std::time::SystemTime>(0), row.get::<_, std::time::SystemTime>(1)), (at, at));
    let row = client.query_one("SELECT $1::timestamptz + interval '1 hour'", &[&at]).await.unwrap();
    assert_eq!(row.get::<_, std::time::SystemTime>(0), at + Duration::from_secs(3600));
    // numeric has no binary form here: 0A000.
    let error = client.query("SELECT n FROM t", &[]).await.unwrap_err();
    assert_eq!(db_error(&error).code().code(), "0A000");
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_string_runs_its_statements_in_turn_and_stops_at_an_error() {
    let (_dir, data) = data_dir();
    let server = Server::start(&data);
    let client = server.connect().await;
    let messages = client.simple_query("CREATE TABLE m (a int PRIMARY KEY); INSERT INTO m VALUES (1), (2); SELECT a FROM m ORDER BY a").await.unwrap();
    let summary: Vec<String> = messages
        .iter()
        .map(|m| match m {
            SimpleQueryMessage::CommandComplete(n) => format!("complete {n}"),
            SimpleQueryMessage::Row(row) => format!("row {}", row.get(0).unwrap()),
            SimpleQueryMessage::RowDescription(columns) => format!("columns {}", columns.len()),
            _ => "other".into(),
        })
        .collect();
    assert_eq!(summary, ["complete 0", "complete 2", "columns 1", "row 1", "row 2", "complete 2"]);

    // The error ends the string and, as the statements ran in one implicit transaction,
    // undoes the ones before it.
    let error = client.simple_query("INSERT INTO m VALUES (3); SELECT 1/0; INSERT INTO m VALUES (4)").await.unwrap_err();
    let db = db_error(&error);
    assert_eq!((db.code().code(), db.message(), db.severity()), ("22012", "division by zero", "ERROR"));
    assert_eq!(rows(&client, "SELECT count(*) FROM m").await, [[Some("2".to_string())]]);
    // A string that manages its own transactions keeps what it committed.
    let error = client.simple_query("BEGIN; INSERT INTO m VALUES (3); COMMIT; INSERT INTO m VALUES (1)").await.unwrap_err();
    assert_eq!(db_error(&error).code().code(), "23505");
    assert_eq!(rows(&client, "SELECT count(*) FROM m").await, [[Some("3".to_string())]]);
    // What cannot run in a transaction block cannot run among other statements either.
    let error = client.simple_query("SELECT 1; VACUUM m").await.unwrap_err();
    assert_eq!(db_error(&error).message(), "VACUUM cannot run inside a transaction block");

    // Detail and the connection going on after an error.
    let error = client.simple_query("INSERT INTO m VALUES (1)").await.unwrap_err();
    let db = db_error(&error);
    assert_eq!(db.code().code(), "23505");
    assert_eq!(db.message(), "duplicate key value violates unique constraint \"m_pkey\"");
    assert_eq!(db.detail(), Some("Key (a)=(1) already exists."));
    let error = client.simple_query("SELECT * FROM nowhere").await.unwrap_err();
    assert_eq!(db_error(&error).code().code(), "42P01");
    // The error's position counts characters from the start of the whole string.
    assert_eq!(db_error(&error).position(), Some(&ErrorPosition::Original(15)));
    let error = client.simple_query("SELECT 'é';\n  SELECT nosuch").await.unwrap_err();
    assert_eq!(db_error(&error).position(), Some(&ErrorPosition::Original(22)));
    let error = client.simple_query("SELECT 1/0").await.unwrap_err();
    assert_eq!(db_error(&error).position(), None);
    assert_eq!(rows(&client, "SELECT 'still here'").await, [[Some("still here".to_string())]]);
    // An empty string and a lone comment are empty queries.
    for empty in ["", "-- nothing", ";"] {
        let messages = client.simple_query(empty).await.unwrap();
        assert!(!messages.iter().any(|m| matches!(m, SimpleQueryMessage::Row(_))), "{empty:?}");
    }
    server.stop();
}

/// A minimal frontend: start-up, then simple queries; returns each ReadyForQuery's status.
struct RawConnection {
    stream: TcpStream,
}

impl RawConnection {
    fn connect(port: u16) -> RawConnection {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut body = Vec::new();
        body.extend_from_slice(&196608i32.to_be_bytes());
        for part in ["user", "postgres", "database", "postgres", ""] {
            body.extend_from_slice(part.as_bytes());
            body.push(0);
        }
        let mut message = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        message.extend_from_slice(&body);
        stream.write_all(&message).unwrap();
        let mut connection = RawConnection { stream };
        connection.until_ready();
        connection
    }

    /// The next message from the server: its type byte and body.
    fn read_message(&mut self) -> (u8, Vec<u8>) {
        let mut header = [0u8; 5];
        self.stream.read_exact(&mut header).unwrap();
        let length = i32::from_be_bytes(header[1..5].try_into().unwrap()) as usize - 4;
        let mut body = vec![0u8; length];
        self.stream.read_exact(&mut body).unwrap();
        (header[0], body)
    }

    /// Read messages up to ReadyForQuery; its status byte and the SQLSTATEs of errors.
    fn until_ready(&mut self) -> (char, Vec<String>) {
        let mut codes = Vec::new();
        loop {
            let (tag, body) = self.read_message();
            match tag {
                b'Z' => return (body[0] as char, codes),
                b'E' => {
                    let fields = body.split(|b| *b == 0);
                    codes.extend(fields.filter(|f| f.first() == Some(&b'C')).map(|f| String::from_utf8_lossy(&f[1..]).into_owned()));
                }
                _ => {}
            }
        }
    }

    /// Send a simple-protocol Query message without reading the answer.
    fn send_query(&mut self, sql: &str) {
        let mut message = vec![b'Q'];
        message.extend_from_slice(&((sql.len() + 5) as i32).to_be_bytes());
        message.extend_from_slice(sql.as_bytes());
        message.push(0);
        self.stream.write_all(&message).unwrap();
    }

    fn query(&mut self, sql: &str) -> (char, Vec<String>) {
        self.send_query(sql);
        self.until_ready()
    }
}

#[test]
fn ready_for_query_reports_the_transaction_block() {
    let (_dir, data) = data_dir();
    let server = Server::start(&data);
    let mut raw = RawConnection::connect(server.port);
    assert_eq!(raw.query("CREATE TABLE x (a int)").0, 'I');
    assert_eq!(raw.query("BEGIN").0, 'T');
    assert_eq!(raw.query("INSERT INTO x VALUES (1)").0, 'T');
    assert_eq!(raw.query("SELECT 1/0"), ('E', vec!["22012".to_string()]));
    assert_eq!(raw.query("SELECT 1"), ('E', vec!["25P02".to_string()]));
    assert_eq!(raw.query("ROLLBACK").0, 'I');
    assert_eq!(raw.query("SELECT count(*) FROM x").0, 'I');
    // An error outside a block leaves the session idle; BEGIN and COMMIT in one string.
    assert_eq!(raw.query("SELECT 1/0"), ('I', vec!["22012".to_string()]));
    assert_eq!(raw.query("BEGIN; INSERT INTO x VALUES (2)").0, 'T');
    assert_eq!(raw.query("COMMIT").0, 'I');
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameters_of_the_extended_protocol() {
    let (_dir, data) = data_dir();
    let server = Server::start(&data);
    let client = server.connect().await;
    let row = client.query_one("SELECT $1::int + 1", &[&41i32]).await.unwrap();
    assert_eq!(row.get::<_, i32>(0), 42);
    let row = client.query_one("SELECT $1 || '!', $2::bigint * 2", &[&"it's", &21i64]).await.unwrap();
    assert_eq!((row.get::<_, &str>(0), row.get::<_, i64>(1)), ("it's!", 42));
    let row = client.query_one("SELECT $1::int IS NULL, $2::text", &[&None::<i32>, &None::<&str>]).await.unwrap();
    assert!(row.get::<_, bool>(0));
    assert_eq!(row.get::<_, Option<&str>>(1), None);

    client.batch_execute("CREATE TABLE p (id int, name text, score float8, ok bool)").await.unwrap();
    let insert = client.prepare("INSERT INTO p VALUES ($1, $2, $3, $4)").await.unwrap();
    let types: Vec<u32> = insert.params().iter().map(|t| t.oid()).collect();
    assert_eq!(types, [23, 25, 701, 16], "INSERT parameters take their columns' types");
    assert_eq!(client.execute(&insert, &[&1i32, &"one", &1.5f64, &true]).await.unwrap(), 1);
    assert_eq!(client.execute(&insert, &[&2i32, &"two; DROP TABLE p", &-0.25f64, &false]).await.unwrap(), 1);
    let found = client.query("SELECT name, score FROM p WHERE id >= $1 ORDER BY id LIMIT $2", &[&1i32, &10i64]).await.unwrap();
    let found: Vec<(String, f64)> = found.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(found, [("one".to_string(), 1.5), ("two; DROP TABLE p".to_string(), -0.25)]);
    // Typed at Parse: the literal is cast to the declared type.
    let typed = client.prepare_typed("SELECT $1 + 1", &[tokio_postgres::types::Type::INT8]).await.unwrap();
    assert_eq!(client.query_one(&typed, &[&9i64]).await.unwrap().get::<_, i64>(0), 10);
    // A statement's error in the extended protocol, and the connection after it.
    let error = client.query_one("SELECT $1::int / 0", &[&1i32]).await.unwrap_err();
    assert_eq!(db_error(&error).code().code(), "22012");
    let error = client.query_one("SELECT $1::int", &[&"x"]).await.unwrap_err();
    assert!(error.as_db_error().is_none(), "text for an int4 parameter is refused by the driver");
    assert_eq!(client.query_one("SELECT count(*) FROM p", &[]).await.unwrap().get::<_, i64>(0), 2);
    // Describe plans without running: a sequence moves once per execution.
    client.batch_execute("CREATE SEQUENCE s").await.unwrap();
    for expected in [1i64, 2] {
        assert_eq!(client.query_one("SELECT nextval('s')", &[]).await.unwrap().get::<_, i64>(0), expected);
    }
    server.stop();
}

#[test]
fn a_client_that_goes_away_mid_query_ends_only_its_connection() {
    let (_dir, data) = data_dir();
    let server = Server::start(&data);
    let mut raw = RawConnection::connect(server.port);
    raw.send_query("SELECT count(*) FROM generate_series(1, 50000000)");
    drop(raw);
    let mut other = RawConnection::connect(server.port);
    assert_eq!(other.query("SELECT 1"), ('I', vec![]));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(other.query("SELECT 2"), ('I', vec![]));
    server.stop();
}

/// A query's rows are sent as the sort's merge produces them (`server_rows.rs`),
/// through the simple and through the extended protocol. Both must give
/// the rows a naive sort gives, also when the sort spills and its key ranges are merged
/// by parallel participants.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ordered_result_streams_in_order() {
    let (_dir, data) = data_dir();
    let server = Server::start(&data);
    let client = server.connect().await;
    let n = 120_000i64;
    client
        .batch_execute(&format!(
            "CREATE TABLE s AS SELECT i, (i * 7919) % 10007 AS k, \
             CASE WHEN i % 7 = 0 THEN NULL ELSE 'v' || i END AS t, \
             timestamptz '2026-01-01 00:00:00+00' + i * interval '1 minute' AS at \
             FROM generate_series(1, {n}) i"
        ))
        .await
        .unwrap();
    let mut expected: Vec<(i64, i64)> = (1..=n).map(|i| ((i * 7919) % 10007, i)).collect();
    expected.sort();
    let sql = "SELECT k, i, t, at FROM s ORDER BY k, i";
    for work_mem in ["64kB", "4MB"] {
        client.batch_execute(&format!("SET work_mem = '{work_mem}'; SET TimeZone = 'Asia/Tokyo'")).await.unwrap();
        let messages = client.simple_query(sql).await.unwrap();
        assert!(matches!(messages.first(), Some(SimpleQueryMessage::RowDescription(columns)) if columns.len() == 4));
        assert!(matches!(messages.last(), Some(SimpleQueryMessage::CommandComplete(count)) if *count == n as u64));
        let streamed: Vec<Vec<Option<String>>> = messages
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(row) => Some((0..4).map(|i| row.get(i).map(str::to_string)).collect()),
                _ => None,
            })
            .collect();
        let keys: Vec<(i64, i64)> = streamed.iter().map(|r| (r[0].as_ref().unwrap().parse().unwrap(), r[1].as_ref().unwrap().parse().unwrap())).collect();
        assert!(keys == expected, "streamed rows out of order at work_mem {work_mem}");
        for (row, (_, i)) in streamed.iter().zip(&expected) {
            let t = if i % 7 == 0 { None } else { Some(format!("v{i}")) };
            assert_eq!(row[2], t);
        }
        assert!(streamed[0][3].as_deref().is_some_and(|at| at.ends_with("+09")), "{:?}", streamed[0][3]);
        // The same rows through the extended protocol (a portal).
        let collected: Vec<Vec<Option<String>>> = client
            .query("SELECT k::text AS k_text, i::text AS i_text, t, at::text AS at_text FROM s ORDER BY k, i", &[])
            .await
            .unwrap()
            .iter()
            .map(|row| (0..4).map(|i| row.get::<_, Option<String>>(i)).collect())
            .collect();
        let first_difference = collected.iter().zip(&streamed).position(|(c, s)| c != s);
        assert!(
            collected.len() == streamed.len() && first_difference.is_none(),
            "the streamed and collected rows differ at work_mem {work_mem}: {} against {} rows, first at {first_difference:?}: {:?}",
            collected.len(),
            streamed.len(),
            first_difference.map(|i| (&collected[i], &streamed[i]))
        );
    }
    // A scan's rows stream a batch at a time from each participant: the same rows
    // through either protocol, in some order.
    let text_rows = |messages: Vec<SimpleQueryMessage>| -> Vec<(String, Option<String>)> {
        messages
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(row) => Some((row.get(0).unwrap().to_string(), row.get(1).map(str::to_string))),
                _ => None,
            })
            .collect()
    };
    let mut streamed = text_rows(client.simple_query("SELECT i, t FROM s WHERE i % 3 <> 1").await.unwrap());
    let mut collected: Vec<(String, Option<String>)> =
        client.query("SELECT i::text AS i_text, t FROM s WHERE i % 3 <> 1", &[]).await.unwrap().iter().map(|row| (row.get(0), row.get(1))).collect();
    assert_eq!(streamed.len() as i64, n - (n + 2) / 3);
    streamed.sort();
    collected.sort();
    assert!(streamed == collected, "the streamed and collected scan rows differ");
    // No row at all: the columns, then the count.
    let messages = client.simple_query("SELECT k FROM s WHERE k < 0 ORDER BY k").await.unwrap();
    assert!(matches!(&messages[..], [SimpleQueryMessage::RowDescription(_), SimpleQueryMessage::CommandComplete(0)]));
    // An error while the sort reads its input ends the query; the session goes on.
    let error = client.simple_query("SELECT 1 / (i - 5000) FROM s ORDER BY k").await.unwrap_err();
    assert_eq!(db_error(&error).code().code(), "22012");
    assert_eq!(rows(&client, "SELECT count(*) FROM s").await, [[Some(n.to_string())]]);
    server.stop();
}

/// A portal's rows (the extended protocol, as drivers run queries) are sent as they are
/// produced: an error partway through comes after the rows before it, as from
/// PostgreSQL, where a collected result would have sent none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_portal_streams_its_rows_up_to_an_error() {
    use futures::StreamExt;
    let (_dir, data) = data_dir();
    let server = Server::start(&data);
    let client = server.connect().await;
    client.batch_execute("CREATE TABLE e AS SELECT i FROM generate_series(1, 200000) i").await.unwrap();
    let rows = client.query_raw("SELECT i, 1000000 / (i - 150000) AS q FROM e", std::iter::empty::<i32>()).await.unwrap();
    futures::pin_mut!(rows);
    let mut seen = std::collections::HashSet::new();
    let error = loop {
        match rows.next().await {
            Some(Ok(row)) => {
                let i: i32 = row.get(0);
                assert_eq!(row.get::<_, i32>(1), 1_000_000 / (i - 150_000));
                assert!(seen.insert(i), "row {i} twice");
            }
            Some(Err(error)) => break error,
            None => panic!("the query ended without its error"),
        }
    };
    assert_eq!(db_error(&error).code().code(), "22012");
    assert!(!seen.is_empty() && seen.len() < 200_000, "{} rows before the error", seen.len());
    // A parameter, a binary result and a result that fits one chunk; the session goes on.
    let got: Vec<i32> = client.query("SELECT i FROM e WHERE i <= $1 ORDER BY i DESC", &[&3i32]).await.unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(got, [3, 2, 1]);
    server.stop();
}

/// A client that goes away while its ordered result streams stops the query: the
/// server serves other connections and removes the sort's temp files.
#[test]
fn a_client_that_goes_away_mid_stream_stops_its_query() {
    let (_dir, data) = data_dir();
    let server = Server::start(&data);
    let mut raw = RawConnection::connect(server.port);
    assert_eq!(raw.query("CREATE TABLE big AS SELECT i, md5(i::text) AS m FROM generate_series(1, 400000) i").0, 'I');
    assert_eq!(raw.query("SET work_mem = '64kB'").0, 'I');
    raw.send_query("SELECT m, i FROM big ORDER BY m");
    // Read up to the first DataRow: the rows are streaming.
    loop {
        let (tag, _) = raw.read_message();
        assert_ne!(tag, b'E', "the query failed");
        if tag == b'D' {
            break;
        }
    }
    drop(raw);
    let mut other = RawConnection::connect(server.port);
    assert_eq!(other.query("SELECT count(*) FROM big"), ('I', vec![]));
    let temp = data.join("tmp");
    let started = Instant::now();
    while std::fs::read_dir(&temp).map(|d| d.count()).unwrap_or(0) > 0 {
        assert!(started.elapsed() < Duration::from_secs(60), "the sort's temp files were left in {temp:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn returning_rows_through_the_extended_protocol() {
    let (_dir, data) = data_dir();
    let server = Server::start(&data);
    let client = server.connect().await;
    client.batch_execute("CREATE TABLE r (id serial, v text)").await.unwrap();
    let inserted = client.query("INSERT INTO r (v) VALUES ($1), ($2) RETURNING id, v", &[&"a", &"b"]).await.unwrap();
    let inserted: Vec<(i32, String)> = inserted.iter().map(|r| (r.get("id"), r.get("v"))).collect();
    assert_eq!(inserted, [(1, "a".to_string()), (2, "b".to_string())]);
    let updated = client.query("UPDATE r SET v = v || $1 WHERE id = $2 RETURNING v", &[&"!", &2i32]).await.unwrap();
    assert_eq!(updated.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>(), ["b!"]);
    let deleted = client.query("DELETE FROM r AS x WHERE x.id = 1 RETURNING x.id", &[]).await.unwrap();
    assert_eq!(deleted.iter().map(|r| r.get::<_, i32>(0)).collect::<Vec<_>>(), [1]);
    assert_eq!(client.execute("UPDATE r SET v = 'c'", &[]).await.unwrap(), 1);
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_have_their_own_sessions() {
    let (_dir, data) = data_dir();
    let server = Server::start(&data);
    let a = server.connect().await;
    let b = server.connect().await;
    a.batch_execute("CREATE TABLE c (x int); BEGIN; INSERT INTO c VALUES (1)").await.unwrap();
    assert_eq!(rows(&b, "SELECT count(*) FROM c").await, [[Some("0".to_string())]]);
    a.batch_execute("COMMIT").await.unwrap();
    assert_eq!(rows(&b, "SELECT count(*) FROM c").await, [[Some("1".to_string())]]);
    // Two statements at once on two connections.
    let (left, right) = tokio::join!(
        a.query_one("SELECT sum(g) FROM generate_series(1, 300000) g", &[]),
        b.query_one("SELECT count(*) FROM generate_series(1, 300000) g", &[]),
    );
    assert_eq!(left.unwrap().get::<_, i64>(0), 45_000_150_000);
    assert_eq!(right.unwrap().get::<_, i64>(0), 300_000);
    a.batch_execute("SET work_mem = '8MB'").await.unwrap();
    assert_eq!(rows(&a, "SHOW work_mem").await, [[Some("8MB".to_string())]]);
    assert_ne!(rows(&b, "SHOW work_mem").await, [[Some("8MB".to_string())]]);
    // Each connection is its own backend, as `pg_stat_progress_create_index.pid` tells.
    assert_ne!(rows(&a, "SELECT pg_backend_pid()").await, rows(&b, "SELECT pg_backend_pid()").await);
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_request_cancels_the_running_statement() {
    let (_dir, data) = data_dir();
    let server = Server::start(&data);
    let client = server.connect().await;
    let token = client.cancel_token();
    // A cancel that arrives before the statement starts is lost (as in PostgreSQL): repeat
    // it until the statement ends, so a slow machine cannot make the test run for minutes.
    let canceler = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(300)).await;
            token.cancel_query(NoTls).await.unwrap();
        }
    });
    let started = Instant::now();
    let error = client.simple_query("SELECT count(*) FROM generate_series(1, 2000000000)").await.unwrap_err();
    canceler.abort();
    let _ = canceler.await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let db = db_error(&error);
    assert_eq!((db.code().code(), db.message()), ("57014", "canceling statement due to user request"));
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(rows(&client, "SELECT 1").await, [[Some("1".to_string())]]);
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_survives_a_restart() {
    let (_dir, data) = data_dir();
    let server = Server::start(&data);
    let client = server.connect().await;
    client.batch_execute("CREATE TABLE kept (a int); INSERT INTO kept SELECT g FROM generate_series(1, 1000) g").await.unwrap();
    // A block left open by a client is rolled back when the server stops.
    let open = server.connect().await;
    open.batch_execute("BEGIN; INSERT INTO kept VALUES (-1)").await.unwrap();
    drop(client);
    server.stop();
    let server = Server::start(&data);
    let client = server.connect().await;
    assert_eq!(rows(&client, "SELECT count(*), min(a), max(a) FROM kept").await, [[Some("1000".into()), Some("1".into()), Some("1000".into())]]);
    server.stop();
}

fn psql(port: u16, args: &[&str]) -> std::process::Output {
    Command::new(PSQL)
        .args(["-X", "-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres"])
        .args(args)
        .env("PGCONNECT_TIMEOUT", "10")
        .output()
        .expect("run psql")
}

#[test]
fn psql_runs_commands_and_scripts() {
    if !Path::new(PSQL).exists() {
        eprintln!("skipped: {PSQL} is not installed");
        return;
    }
    let (dir, data) = data_dir();
    let server = Server::start(&data);
    let output = psql(server.port, &["-c", "select 1 as one, 'a' as t"]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), " one | t \n-----+---\n   1 | a\n(1 row)\n\n");
    assert!(output.status.success());

    let script = dir.path().join("script.sql");
    std::fs::write(
        &script,
        "CREATE TABLE s (a int, b text);\nINSERT INTO s VALUES (1, 'x'), (2, NULL);\nSELECT * FROM s ORDER BY a;\nSELECT 1/0;\nSELECT current_database();\n",
    )
    .unwrap();
    let output = psql(server.port, &["-f", script.to_str().unwrap()]);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "CREATE TABLE\nINSERT 0 2\n a | b \n---+---\n 1 | x\n 2 | \n(2 rows)\n\n current_database \n------------------\n postgres\n(1 row)\n\n"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("script.sql:4: ERROR:  division by zero"), "{stderr}");
    // -A -t, and an error's exit status.
    let output = psql(server.port, &["-A", "-t", "-c", "select a, b from s order by a"]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "1|x\n2|\n");
    // FETCH_COUNT: psql reads the result through a cursor (DECLARE, FETCH FORWARD, CLOSE).
    let output = psql(server.port, &["-v", "FETCH_COUNT=1", "-A", "-t", "-c", "select a, b from s order by a"]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "1|x\n2|\n", "{}", String::from_utf8_lossy(&output.stderr));
    let output = psql(server.port, &["-c", "select * from missing"]);
    assert_eq!(output.status.code(), Some(1));
    // The error's position: psql prints the `LINE 1:` excerpt PostgreSQL's gets.
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "ERROR:  relation \"missing\" does not exist\nLINE 1: select * from missing\n                      ^\n"
    );

    // psql's relation lists, from its own catalog queries (pg_class, pg_namespace, pg_am,
    // pg_index, pg_get_userbyid, pg_table_is_visible, OPERATOR(pg_catalog.~)).
    psql(server.port, &["-c", "CREATE TABLE t2 (k int PRIMARY KEY); CREATE INDEX s_b ON s (b)"]);
    let output = psql(server.port, &["-c", "\\dt"]);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "        List of relations\n Schema | Name | Type  |  Owner   \n--------+------+-------+----------\n public | s    | table | postgres\n public | t2   | table | postgres\n(2 rows)\n\n"
    );
    let output = psql(server.port, &["-A", "-t", "-c", "\\di"]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "public|s_b|index|postgres|s\npublic|t2_pkey|index|postgres|t2\n");
    let output = psql(server.port, &["-A", "-t", "-c", "\\dt t*"]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "public|t2|table|postgres\n");
    server.stop();
}
