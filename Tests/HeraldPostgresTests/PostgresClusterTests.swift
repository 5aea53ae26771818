import Foundation
import HeraldTestSupport
import Testing

@testable import HeraldPostgres

/// The throwaway cluster is what it claims: socket only, fsync off, never root.
@Suite struct PostgresClusterTests {
    @Test func theSharedClusterRunsAsAnUnprivilegedUser() throws {
        let conn = try PostgresConnection(PostgresOptions(connection: try PostgresConnectionString(try PostgresCluster.shared().url)))
        #expect(try conn.queryValue("SELECT current_setting('listen_addresses')") == "")
        #expect(try conn.queryValue("SELECT current_setting('fsync')") == "off")
        // The server process (this session's backend) never runs as root; as another user
        // it runs as that user.
        let status = try String(contentsOfFile: "/proc/\(conn.backendPID)/status", encoding: .utf8)
        let uidLine = try #require(status.split(separator: "\n").first { $0.hasPrefix("Uid:") })
        let uid = try #require(uidLine.split(whereSeparator: { $0 == "\t" || $0 == " " }).dropFirst().first.flatMap { UInt32($0) })
        #expect(uid != 0)
        if getuid() != 0 { #expect(uid == getuid()) }
    }
}
