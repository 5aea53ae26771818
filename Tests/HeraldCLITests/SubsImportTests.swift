import Foundation
import HeraldCore
import HeraldHTTPServer
import Testing

@testable import HeraldCLI

@Suite struct SubsImportTests {
    /// A token file: `count` tokens with a comment header, blank lines and CRLF endings
    /// sprinkled in. Returns the path and, per token, its line number.
    func tokenFile(_ count: Int, badAt: Int? = nil) throws -> (path: String, lines: [Int], tokens: [String]) {
        var text = "# tokens exported from the app backend\n\n"
        var line = 2
        var lines: [Int] = []
        var tokens: [String] = []
        for i in 0..<count {
            if i % 7 == 3 {
                text += "   \n"
                line += 1
            }
            let token = i == badAt ? "not-a-token" : String(format: "%064x", i + 1)
            text += "  " + token + (i % 2 == 0 ? "\r\n" : "\n")
            line += 1
            lines.append(line)
            tokens.append(token)
        }
        let path = NSTemporaryDirectory() + "herald-tokens-\(UUID().uuidString).txt"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return (path, lines, tokens)
    }

    @Test func theFileIsStreamedInBatchesInOrderWithTotals() throws {
        let (path, lines, tokens) = try tokenFile(25)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let stub = try StubServer { r, _ in
            guard r.method == "POST", r.path == "/v1/channels/match-1/subscriptions:batch",
                let n = r.json?["subscribe"]?.arrayValue?.count
            else { return .error(400, code: "invalid_body", message: "stub") }
            return .json(200, ["subscribed": .int(Int64(n - 1)), "updated": 1, "unsubscribed": 0])
        }
        let r = stub.run(["subs", "import", "match-1", path, "--batch-size", "10", "--kind", "activity"])
        #expect(r.code == 0, "\(r.err)")
        let batches = stub.requests.map { $0.json?["subscribe"]?.arrayValue ?? [] }
        #expect(batches.map(\.count) == [10, 10, 5])
        #expect(batches.flatMap { $0 }.map { $0["token"]?.stringValue ?? "" } == tokens)
        #expect(batches.flatMap { $0 }.allSatisfy { $0["kind"] == "activity" })
        #expect(r.out.hasPrefix("imported 25 tokens into match-1 in "))
        #expect(r.out.contains("22 new, 3 already subscribed"))
        #expect(r.out.contains("tokens/s"))
        // Not a terminal: the first progress line is printed at once, as a plain line.
        // The percentage is of the file's bytes up to the 10th token's line.
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let upTo = text.utf8.split(separator: 10, omittingEmptySubsequences: false).prefix(lines[9]).reduce(0) { $0 + $1.count + 1 }
        #expect(r.err.hasPrefix("importing  10 tokens (\(upTo * 100 / text.utf8.count)%)"))
        #expect(!r.err.contains("\r"))

        let json = stub.run(["subs", "import", "match-1", path, "--json"])
        #expect(json.json?["tokens"] == 25)
        #expect(json.json?["subscribed"] == 24)
    }

    @Test func a422NamesTheLineOfTheFirstBadToken() throws {
        let (path, lines, _) = try tokenFile(25, badAt: 13)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let stub = try StubServer { r, _ in
            let entries = r.json?["subscribe"]?.arrayValue ?? []
            if let i = entries.firstIndex(where: { $0["token"] == "not-a-token" }) {
                return .error(422, code: "invalid_token", message: "subscribe[\(i)].token is not a hex device token")
            }
            return .json(200, ["subscribed": .int(Int64(entries.count)), "updated": 0, "unsubscribed": 0])
        }
        let r = stub.run(["subs", "import", "match-1", path, "--batch-size", "10"])
        #expect(r.code == 1)
        #expect(r.err.contains("\(path) line \(lines[13]): token 'not-a-token' refused"))
        #expect(r.err.contains("10 tokens from earlier lines were imported"))
        #expect(stub.requests.count == 2)
    }

    @Test func aMissingFileIsAFailure() throws {
        let stub = try StubServer { _, _ in .empty(500) }
        let r = stub.run(["subs", "import", "match-1", "/nonexistent/tokens.txt"])
        #expect(r.code == 1)
        #expect(r.err.contains("cannot read /nonexistent/tokens.txt: no such file"))
    }

    @Test func theBadIndexIsFoundInTheUsualMessageShapes() {
        #expect(SubsImport.badIndex(in: "subscribe[12].token: not hex") == 12)
        #expect(SubsImport.badIndex(in: "invalid token at index 4") == 4)
        #expect(SubsImport.badIndex(in: "entry 9 is not hex") == 9)
        #expect(SubsImport.badIndex(in: "bad token") == nil)
    }
}
