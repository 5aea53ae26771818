import HeraldSQL

/// The columns a query selects, in order: the select list is made from the cases, and rows
/// are read by case, so a column cannot be read at the wrong position (before, 26 event
/// columns were read by number against a separate name list).
protocol ColumnTable: CaseIterable, Hashable, RawRepresentable where RawValue == String, AllCases: RandomAccessCollection {}

extension ColumnTable {
    /// The position of this column in `selectList`.
    var index: Int32 { Int32(Self.allCases.distance(from: Self.allCases.startIndex, to: Self.allCases.firstIndex(of: self)!)) }

    /// `a, b, c`: the SQL select list, in case order.
    static var selectList: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

extension Statement {
    func isNull<C: ColumnTable>(_ c: C) -> Bool { isNull(c.index) }
    func int64<C: ColumnTable>(_ c: C) -> Int64 { int64(c.index) }
    func int<C: ColumnTable>(_ c: C) -> Int { int(c.index) }
    func text<C: ColumnTable>(_ c: C) -> String { text(c.index) }
    func blob<C: ColumnTable>(_ c: C) -> [UInt8] { blob(c.index) }
    func optionalText<C: ColumnTable>(_ c: C) -> String? { isNull(c.index) ? nil : text(c.index) }
    func optionalInt64<C: ColumnTable>(_ c: C) -> Int64? { isNull(c.index) ? nil : int64(c.index) }
    func optionalBlob<C: ColumnTable>(_ c: C) -> [UInt8]? { isNull(c.index) ? nil : blob(c.index) }
}

/// An event row joined with its channel's id (`events e JOIN channels c`).
enum EventColumn: String, ColumnTable {
    case id = "e.id"
    case channelNum = "e.channel"
    case channelID = "c.id"
    case seq = "e.seq"
    case kind = "e.kind"
    case apsTimestamp = "e.aps_timestamp"
    case payload = "e.payload"
    case priority = "e.priority"
    case expiration = "e.expiration"
    case state = "e.state"
    case failureReason = "e.failure_reason"
    case supersededBy = "e.superseded_by"
    case createdAt = "e.created_at_ms"
    case startedAt = "e.started_at_ms"
    case finishedAt = "e.finished_at_ms"
    case targets = "e.targets"
    case sent = "e.sent"
    case failed = "e.failed"
    case pruned = "e.pruned"
    case retried = "e.retried"
    case skipped = "e.skipped"
    case passStart = "e.pass_start"
    case cursor = "e.cursor"
    case wrapped = "e.wrapped"
    case broadcastState = "e.broadcast_state"
    case broadcastReason = "e.broadcast_reason"
    case sendAt = "e.send_at"
}

/// A channel row.
enum ChannelColumn: String, ColumnTable {
    case num, id
    case bundleID = "bundle_id"
    case mode, environment
    case storagePolicy = "storage_policy"
    case apnsChannelID = "apns_channel_id"
    case state, lifecycle
    case lastSeq = "last_seq"
    case lastTimestamp = "last_timestamp"
    case currentEvent = "current_event"
    case catchUp = "catch_up"
    case minInterval = "min_interval_ms"
    case p10Budget = "p10_budget_per_hour"
    case createdAt = "created_at_ms"
    case closedAt = "closed_at_ms"
    case expiresAt = "expires_at"
}

extension Array where Element == EventState {
    /// `'queued', 'sending'`: an SQL list of states made from the enum (no state literal
    /// beside it in a query).
    var sqlList: String { map { "'\($0.rawValue)'" }.joined(separator: ", ") }
}
