import Foundation
import Testing

/// Deploy/systemd: the unit verifies, its sandbox scores well, its user can be created.
@Suite struct SystemdUnitTests {
    static let unit = "Deploy/systemd/herald.service"
    static let units = ["herald.service", "herald-backup.service", "herald-backup.timer"]

    /// The units with their executables pointing at the `herald` this build produced
    /// (verify checks that executables exist), in a temporary directory.
    static func installableCopies() throws -> (dir: String, cleanup: () -> Void) {
        let herald = try #require(Repo.heraldExecutable, "the herald executable was not built (swift build --build-tests builds it)")
        let dir = NSTemporaryDirectory() + "herald-systemd-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for unit in units {
            let text = try Repo.text("Deploy/systemd/" + unit).replacingOccurrences(of: "/usr/local/bin/herald", with: herald)
            try text.write(toFile: dir + "/" + unit, atomically: true, encoding: .utf8)
        }
        return (dir, { try? FileManager.default.removeItem(atPath: dir) })
    }

    @Test(.enabled(if: Tool.systemdAnalyze != nil, "systemd-analyze is not installed (Debian package: systemd)"))
    func unitsPassSystemdAnalyzeVerify() throws {
        let (dir, cleanup) = try Self.installableCopies()
        defer { cleanup() }
        let r = try Tool.run(Tool.systemdAnalyze!, ["verify"] + Self.units.map { dir + "/" + $0 })
        #expect(r.status == 0, "\(r.output)")
        #expect(r.output.isEmpty, "systemd-analyze verify warned: \(r.output)")
    }

    /// `systemd-analyze security` rates a sandbox from 0 (locked down) to 10; the services
    /// must stay at 2.0 or better.
    @Test(
        .enabled(if: Tool.systemdAnalyze != nil, "systemd-analyze is not installed (Debian package: systemd)"),
        arguments: ["herald.service", "herald-backup.service"])
    func sandboxExposureIsTwoOrLower(unit: String) throws {
        let (dir, cleanup) = try Self.installableCopies()
        defer { cleanup() }
        let r = try Tool.run(Tool.systemdAnalyze!, ["security", "--offline=true", "--threshold=20", "--no-pager", dir + "/" + unit])
        #expect(r.status == 0, "\(unit): exposure above 2.0:\n\(r.output.split(separator: "\n").suffix(3).joined(separator: "\n"))")
    }

    @Test func backupUnitRunsTheBackupVerbAsTheServiceUser() throws {
        let text = try Repo.text("Deploy/systemd/herald-backup.service")
        #expect(text.contains("User=herald\n") && text.contains("Type=oneshot"))
        #expect(text.contains("ExecStart=/usr/local/bin/herald backup --db /var/lib/herald/herald.db --to /var/lib/herald-backup/"))
        #expect(try Repo.text("Deploy/systemd/herald-backup.timer").contains("Persistent=true"))
    }

    @Test func unitKeepsTheHardeningTheIssueAsksFor() throws {
        let text = try Repo.text(Self.unit)
        for setting in [
            "User=herald", "StateDirectory=herald", "ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes",
            "CapabilityBoundingSet=\n", "EnvironmentFile=/etc/herald/herald.env", "ExecStartPre=/usr/local/bin/herald serve --check-config",
            "ExecStart=/usr/local/bin/herald serve\n", "LoadCredential=apns-key.p8:",
        ] {
            #expect(text.contains(setting), "herald.service lacks \(setting)")
        }
    }

    @Test(.enabled(if: Tool.systemdSysusers != nil, "systemd-sysusers is not installed (Debian package: systemd)"))
    func sysusersCreatesTheServiceUserWithoutALoginShell() throws {
        let root = NSTemporaryDirectory() + "herald-sysusers-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root + "/etc", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let r = try Tool.run(Tool.systemdSysusers!, ["--root=\(root)", Repo.path("Deploy/systemd/herald.sysusers")])
        #expect(r.status == 0, "\(r.output)")
        let passwd = try String(contentsOfFile: root + "/etc/passwd", encoding: .utf8)
        let entry = try #require(passwd.split(separator: "\n").first { $0.hasPrefix("herald:") })
        let fields = entry.split(separator: ":", omittingEmptySubsequences: false)
        #expect(fields.count == 7)
        #expect(fields[5] == "/var/lib/herald" && fields[6] == "/usr/sbin/nologin")
        #expect(Int(fields[2]).map { $0 > 0 && $0 < 1000 } == true)  // a system user
    }
}
