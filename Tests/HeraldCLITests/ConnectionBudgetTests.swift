import Testing

@testable import HeraldCLI

/// The API's connection cap as sized from the file limit (docs/operations.md, "Connection
/// limits"): reserve = 256 + 16 × HTTP threads + 4 × APNs connections + 256 (the HTTP
/// server's closing allowance).
@Suite struct ConnectionBudgetTests {
    static func plan(_ limit: Int, requested: Int? = nil, threads: Int = 4, apns: Int = 4) throws(ConnectionBudget.Failure)
        -> ConnectionBudget
    {
        try ConnectionBudget.plan(
            fileLimit: limit, requested: requested, httpThreads: threads, apnsConnections: apns, closingAllowance: 256)
    }

    @Test func theDefaultIsTheFileLimitLessTheReserve() throws {
        let b = try Self.plan(20_000)
        #expect(b.reserve == 256 + 16 * 4 + 4 * 4 + 256)
        #expect(b.reserve == 592)
        #expect(b.maxConnections == 19_408 && b.allowed == 19_408)
        #expect(!b.explicit && !b.isLow)
        // More threads and APNs connections keep more back.
        #expect(try Self.plan(20_000, threads: 8, apns: 16).maxConnections == 20_000 - (256 + 128 + 64 + 256))
    }

    @Test func theDefaultStopsAtTheCeilingHoweverHighTheLimit() throws {
        #expect(try Self.plan(1 << 20).maxConnections == 65_536)
        #expect(try Self.plan(65_536 + 592).maxConnections == 65_536)
        #expect(try Self.plan(65_536 + 591).maxConnections == 65_535)
    }

    @Test func aLowLimitStillAllowsOneConnectionPerThreadAndIsFlagged() throws {
        let debianSoft = try Self.plan(1024)
        #expect(debianSoft.maxConnections == 432 && debianSoft.isLow)
        #expect(try Self.plan(256).maxConnections == 4)
    }

    @Test func anExplicitCapWinsWithinTheLimitAndIsRefusedAboveIt() throws {
        let b = try Self.plan(20_000, requested: 200)
        #expect(b.maxConnections == 200 && b.explicit)
        #expect(try Self.plan(20_000, requested: 19_408).maxConnections == 19_408)
        // Above the ceiling is fine when the limit allows it: the ceiling is only the default's.
        #expect(try Self.plan(1 << 20, requested: 100_000).maxConnections == 100_000)
        #expect(throws: ConnectionBudget.Failure.aboveFileLimit(requested: 19_409, allowed: 19_408, fileLimit: 20_000, reserve: 592)) {
            try Self.plan(20_000, requested: 19_409)
        }
        // Below the thread count it is raised to one connection per thread, as before.
        #expect(try Self.plan(20_000, requested: 2).maxConnections == 4)
    }

    @Test func theRefusalSaysWhatToRaiseAndByHowMuch() {
        let text = ConnectionBudget.Failure.aboveFileLimit(requested: 30_000, allowed: 19_408, fileLimit: 20_000, reserve: 592).description
        #expect(text.contains("30592") && text.contains("19408") && text.contains("LimitNOFILE"))
    }

    @Test func servingRaisesTheSoftLimitToTheHardOne() {
        let r = FileLimit.raiseSoftToHard()
        #expect(r.soft == r.hard && r.before <= r.soft)
        #expect(FileLimit.raiseSoftToHard() == FileLimit.Raised(before: r.soft, soft: r.soft, hard: r.hard))
    }

    @Test func theSettingsDefaultToThePerAddressCapAndAFileLimitSizedTotal() throws {
        var args = Arguments([], environment: [:])
        let s = try ServeSettings.read(&args)
        #expect(s.httpMaxConnectionsPerIP == 128 && s.httpMaxConnections == nil)
        var off = Arguments(["--http-max-connections-per-ip", "0", "--http-max-connections", "200"], environment: [:])
        let t = try ServeSettings.read(&off)
        #expect(t.httpMaxConnectionsPerIP == 0 && t.httpMaxConnections == 200)
    }
}
