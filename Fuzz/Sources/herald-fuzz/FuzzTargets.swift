import Foundation

/// One fuzz target: its name (also its corpus folder, `Fuzz/corpus/<name>/`) and the check
/// run on each input.
struct FuzzTarget: Sendable {
    let name: String
    let summary: String
    let run: @Sendable ([UInt8]) -> Void
}

/// Every target of `herald-fuzz`. One executable serves them all (one instrumented build
/// instead of eight); `HERALD_FUZZ_TARGET` picks the one a run exercises.
enum FuzzTargets {
    static let all: [FuzzTarget] = [
        FuzzTarget(name: "publish", summary: "publish body: JSON.parse, LiveActivityEvent.validate, render", run: PublishTarget.run),
        FuzzTarget(
            name: "batch", summary: "subscriptions:batch body (BatchBody.decode) against a reference over the JSON tree",
            run: BatchTarget.run),
        FuzzTarget(name: "route", summary: "Route(rawPath:), with a round trip through percent-encoding", run: RouteTarget.run),
        FuzzTarget(name: "hostport", summary: "HostPort(parsing:), with a round trip through its description", run: HostPortTarget.run),
        FuzzTarget(name: "jwt", summary: "ParsedJWT.parse (the simulator's provider-token check)", run: JWTTarget.run),
        FuzzTarget(
            name: "faults", summary: "SimulatorFaults.parse (--faults and PUT /faults), with a round trip through spec",
            run: FaultsTarget.run),
        FuzzTarget(name: "codecs", summary: "Hex and Base64URL decode/encode round trips", run: CodecsTarget.run),
        FuzzTarget(
            name: "apns-response", summary: "PushOutcome.classify of an APNs answer (status, body, retry-after)",
            run: APNSResponseTarget.run),
    ]

    /// The target named by `HERALD_FUZZ_TARGET`; exits with status 2 and the list when it
    /// names none. (A lazy global: initialised on the first input, after libFuzzer's main.)
    static let selected: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["HERALD_FUZZ_TARGET"] ?? ""
        if let t = all.first(where: { $0.name == name }) { return t }
        var text = "herald-fuzz: set HERALD_FUZZ_TARGET to one of:\n"
        for t in all { text += "  \(t.name)\t\(t.summary)\n" }
        FileHandle.standardError.write(Data(text.utf8))
        exit(2)
    }()
}

/// How a target reports a finding: a trap that libFuzzer records as a crash, with the
/// reason on stderr.
enum FuzzCheck {
    static func fail(_ why: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
        fatalError("fuzz check failed: \(why)", file: file, line: line)
    }

    static func expect(_ ok: Bool, _ why: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
        if !ok { fail(why(), file: file, line: line) }
    }
}
