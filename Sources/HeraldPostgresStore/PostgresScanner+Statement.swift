import HeraldStore

extension PostgresScanner {
    /// The statement reading a pass's rows of `shards` after `$3` (through `$6` when
    /// `bounded`), live at `$4`, at most `$5`, in token order, of channel `$1` and kind `$2`.
    ///
    /// The key is (channel, kind, shard, token) (Migrations/postgres/0009_shard_key.sql), so
    /// each shard is a range of it ordered by token: one ranged `SELECT … ORDER BY token
    /// LIMIT $5` per shard, `UNION ALL`, ordered by token again, which PostgreSQL runs as a
    /// MERGE APPEND of index scans that each stop once the merge has taken its `$5` rows. A
    /// lease reads its own shards' rows and no other (with the shard a filter over the
    /// channel's whole range, a third of the shards read three times their rows). The shard
    /// numbers are in the text: one prepared statement per shard set (a worker sees few).
    static func statement(shards: ShardSet, bounded: Bool) -> String {
        let branches = (0..<Shards.count).filter(shards.contains).map { shard in
            """
            SELECT token, registered_at_ms, expires_at FROM subscriptions
            WHERE channel = $1 AND kind = $2 AND shard = \(shard) AND token > $3\(bounded ? " AND token <= $6" : "")
            AND (expires_at IS NULL OR expires_at > $4) ORDER BY token LIMIT $5
            """
        }
        if branches.count == 1 { return branches[0] }
        return "SELECT token, registered_at_ms, expires_at FROM ("
            + branches.map { "(" + $0 + ")" }.joined(separator: " UNION ALL ") + ") AS u ORDER BY token LIMIT $5"
    }
}
