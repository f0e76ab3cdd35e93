//! The SQL of the source texts' workloads, shared by `weft demo`, `weft bench` and tests.

/// The table the parallel tuplesort text builds (seeds/000), scaled: `generate_series(0, N)`
/// makes N + 1 rows. The text's own scale is `1e9`.
pub fn create_parallel_sort_test(last: u64) -> String {
    format!(
        "CREATE TABLE parallel_sort_test AS\n\
         SELECT hashint8(i) randint,\n\
         md5(i::text) collate \"C\" padding1,\n\
         md5(i::text || '2') collate \"C\" padding2\n\
         FROM generate_series(0, {last}::bigint) i"
    )
}

/// A full scan with an aggregate whose answer both systems must agree on.
pub const COUNT_AND_SUM: &str = "SELECT count(*), sum(randint) FROM parallel_sort_test";

#[cfg(test)]
mod tests {
    #[test]
    fn seed_statement_is_the_texts_with_a_scale() {
        let sql = super::create_parallel_sort_test(1000);
        assert!(sql.starts_with("CREATE TABLE parallel_sort_test AS\nSELECT hashint8(i) randint,\n"));
        assert!(sql.ends_with("FROM generate_series(0, 1000::bigint) i"));
    }
}
