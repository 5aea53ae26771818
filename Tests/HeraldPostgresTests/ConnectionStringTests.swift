import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

@testable import HeraldPostgres

/// Passwords never reach an error or a log: refused in the string, masked when a string
/// cannot even be parsed, and absent when the server rejects the one from a passfile.
@Suite struct ConnectionStringTests {
    @Test func bothURLSchemesAndKeyValueStringsAreAccepted() throws {
        for s in ["postgresql://herald@/db?host=/tmp", "postgres://u@localhost:5433/db?sslmode=disable", "host=/tmp dbname=x user=y"] {
            #expect(try PostgresConnectionString(s).redacted == s)
        }
    }

    @Test func aPasswordInTheStringIsRefusedAndNotShown() throws {
        for (text, secret) in [
            ("postgresql://herald:S3cr%40t@db.example/x", "S3cr%40t"), ("postgres://u:hunter2@h/x?sslmode=require", "hunter2"),
            ("postgresql://u@h/x?password=opensesame", "opensesame"), ("host=h password=letmein dbname=x", "letmein"),
            ("host=h password = 'it''s me' dbname=x", "it''s me"),
        ] {
            let e = try #require(throws: PostgresError.self) { try PostgresConnectionString(text) }
            #expect(e.kind == .configuration)
            #expect(!e.description.contains(secret))
            #expect(!String(describing: e).contains(secret))
            #expect(e.target?.contains("<redacted>") == true)
        }
    }

    @Test func redactionMasksEveryPasswordForm() {
        #expect(PostgresConnectionString.redact("postgresql://a:b@c/d") == "postgresql://a:<redacted>@c/d")
        #expect(PostgresConnectionString.redact("postgresql://a:b@c@d/e") == "postgresql://a:<redacted>@d/e")
        #expect(PostgresConnectionString.redact("postgres://a@c/d?x=1&password=p&y=2") == "postgres://a@c/d?x=1&password=<redacted>&y=2")
        #expect(PostgresConnectionString.redact("user=a PASSWORD='x y' host=h") == "user=a PASSWORD=<redacted> host=h")
        #expect(PostgresConnectionString.redact("postgresql://a@c/d") == "postgresql://a@c/d")
    }

    @Test func anUnparsableStringsErrorDoesNotQuoteItsPassword() throws {
        let e = try #require(throws: PostgresError.self) { try PostgresConnectionString("postgresql://u:se%zzcret@h/x") }
        #expect(e.kind == .configuration)
        #expect(!e.description.contains("se%zzcret"))
        #expect(!e.description.contains("cret"))
    }

    @Test func aWrongPasswordFromAPassfileFailsWith28P01AndIsNeverShown() throws {
        let cluster = try PostgresCluster.shared()
        let role = "pw_\(UInt32.random(in: 0...UInt32.max))"
        let admin = try PostgresConnection(PostgresOptions(connection: try PostgresConnectionString(cluster.url)))
        try admin.execute("CREATE ROLE \(role) LOGIN PASSWORD 'right-Pa55word' IN ROLE password_users")
        defer { _ = try? admin.execute("DROP ROLE \(role)") }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pgpass-\(role)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }

        func connect(password: String, log: Logger = .discard) throws -> PostgresConnection {
            let passfile = dir + "/pgpass-\(password.count)"
            try "*:*:*:\(role):\(password)\n".write(toFile: passfile, atomically: false, encoding: .utf8)
            chmod(passfile, 0o600)
            let url = "postgresql://\(role)@/postgres?host=\(cluster.directory)&passfile=\(passfile)"
            return try PostgresConnection(PostgresOptions(connection: try PostgresConnectionString(url)), log: log)
        }
        let e = try #require(throws: PostgresError.self) { try connect(password: "wrong-Pa55word-xyz") }
        #expect(e.kind == .connection)
        #expect(e.sqlState == .invalidPassword)
        #expect(!e.description.contains("Pa55word"))

        // The right one works, and a failed reconnect's log lines show no password either.
        let lines = Locked<[String]>([])
        let log = Logger(subsystem: "postgres", sink: LogSink(level: .debug) { line in lines.withLock { $0.append(line) } })
        let conn = try connect(password: "right-Pa55word", log: log)
        #expect(try conn.queryValue("SELECT current_user::text") == .text(role))
        try admin.execute("ALTER ROLE \(role) PASSWORD 'changed-Pa55word'")
        _ = try admin.queryValue("SELECT pg_terminate_backend($1)::bool", [.int8(Int64(conn.backendPID))])
        #expect(throws: PostgresError.self) {
            try conn.reconnect(backoff: ReconnectBackoff(base: .milliseconds(10), cap: .milliseconds(20)), within: .milliseconds(100))
        }
        let logged = lines.withLock { $0 }
        #expect(!logged.isEmpty)
        #expect(logged.allSatisfy { !$0.contains("Pa55word") })
    }
}
