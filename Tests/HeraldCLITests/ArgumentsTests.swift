import Testing

@testable import HeraldCLI

@Suite struct ArgumentsTests {
    @Test func optionsFlagsAndPositionalsAreReadAndTheRestRefused() throws {
        var a = Arguments(
            ["create", "m1", "--bundle-id", "com.x", "--json", "--mode=hybrid"], environment: ["HERALD_SERVER": "http://h:1"])
        #expect(try a.positional("verb") == "create")
        #expect(try a.option("--bundle-id") == "com.x")
        #expect(try a.option("--mode") == "hybrid")
        #expect(try a.option("--server", env: "HERALD_SERVER") == "http://h:1")
        let json = a.flag("--json")
        #expect(json)
        #expect(try a.positional("ID") == "m1")
        try a.finish()
        let b = Arguments(["--bogus"], environment: [:])
        #expect(throws: UsageError.self) { try b.finish() }
    }

    @Test func unknownVerbIsAUsageError() {
        let c = Console(capture: true)
        #expect(HeraldCLI.main(["nope"], environment: [:], console: c) == ExitCode.usage)
        #expect(c.capturedError.contains("unknown command"))
        #expect(HeraldCLI.main(["version", "--help"], environment: [:], console: c) == ExitCode.ok)
    }
}
