import Testing

@testable import HeraldCLI

@Suite struct HelpTextTests {
    static let clientVerbs: [[String]] = [
        ["channels"], ["channels", "create"], ["channels", "list"], ["channels", "show"], ["channels", "close"], ["channels", "reconcile"],
        ["keys"], ["keys", "create"], ["keys", "list"], ["keys", "revoke"],
        ["subs"], ["subs", "add"], ["subs", "import"], ["subs", "remove"],
        ["publish"],
    ]

    @Test(arguments: clientVerbs)
    func everyClientVerbExplainsItsOptionsEnvironmentAndAnExample(_ words: [String]) {
        let r = CLIResult.run(words + ["--help"], env: [:])
        #expect(r.code == 0)
        #expect(r.out.hasPrefix("Usage: herald " + words.joined(separator: " ")))
        for needle in ["--server URL", "HERALD_SERVER", "HERALD_ADMIN_TOKEN", "default http://127.0.0.1:8080", "HERALD_DB", "Example"] {
            #expect(r.out.contains(needle), "\(words) help lacks \(needle)")
        }
    }

    @Test func subVerbHelpDescribesItsOwnOptions() {
        #expect(CLIResult.run(["channels", "create", "--help"], env: [:]).out.contains("--bundle-id B"))
        #expect(CLIResult.run(["keys", "create", "--help"], env: [:]).out.contains("--role R"))
        #expect(CLIResult.run(["subs", "import", "--help"], env: [:]).out.contains("(default 10000)"))
        #expect(CLIResult.run(["publish", "--help"], env: [:]).out.contains("--idempotency-key K"))
        // Help wins over anything else on the line, even a missing server.
        #expect(CLIResult.run(["channels", "show", "x", "--server", "http://127.0.0.1:1", "--help"], env: [:]).code == 0)
    }

    @Test func apnsSimHelpNamesEveryOptionAndItsEnvironment() {
        let r = CLIResult.run(["apns-sim", "--help"], env: [:])
        #expect(r.code == 0)
        for needle in [
            "HERALD_SIM_LISTEN", "127.0.0.1:2197", "HERALD_SIM_CONTROL", "127.0.0.1:2198", "HERALD_SIM_DIR", "./apns-sim",
            "--max-streams N", "--threads N", "HERALD_SIM_FAULTS", "--no-ledger", "Example",
        ] {
            #expect(r.out.contains(needle), "apns-sim help lacks \(needle)")
        }
    }

    @Test func theOverviewListsTheNewVerbs() {
        let r = CLIResult.run(["--help"], env: [:])
        for verb in ["channels", "keys", "subs", "publish", "apns-sim"] { #expect(r.out.contains("  \(verb) ")) }
    }
}
