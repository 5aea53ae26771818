import HeraldAPNS
import HeraldCore

/// The publish path up to the store: the body parsed as JSON, validated as a Live Activity
/// event, rendered with a timestamp into the bytes APNs receives.
///
/// Beyond "no crash": the parsed tree survives its own encoding (the payload stored and
/// sent is what was validated; a number may come back as the other JSON number case with the
/// same value, e.g. 6.6e17 is printed as 660000000000000000 and read back as an integer); a refusal is a 400 or 422; the rendered payload is JSON
/// whose `aps.timestamp` is the one given and which validates again as the same event.
enum PublishTarget {
    static func run(_ data: [UInt8]) {
        guard let json = try? JSON.parse(data) else { return }
        guard let again = try? JSON.parse(json.encoded()) else { FuzzCheck.fail("encoded tree does not parse: \(json.text)") }
        FuzzCheck.expect(sameValue(again, json), "the tree changed through encoding: \(json) -> \(again)")

        let event: LiveActivityEvent
        do {
            event = try LiveActivityEvent.validate(json)
        } catch {
            FuzzCheck.expect(error.status == 400 || error.status == 422, "refused with status \(error.status)")
            FuzzCheck.expect(!error.code.isEmpty && !error.message.isEmpty, "refusal without code or message")
            return
        }
        for ts in [Int64(0), event.timestamp ?? 1_700_000_000, Int64.max] {
            let bytes = event.render(timestamp: ts)
            guard let rendered = try? JSON.parse(bytes) else { FuzzCheck.fail("rendered payload is not JSON") }
            FuzzCheck.expect(rendered.objectValue?.keys.sorted() == ["aps"], "rendered payload has members besides aps")
            FuzzCheck.expect(rendered["aps"]?["timestamp"] == .int(ts), "rendered timestamp is not \(ts)")
            let back: LiveActivityEvent
            do {
                back = try LiveActivityEvent.validate(rendered)
            } catch {
                FuzzCheck.fail("the rendered payload no longer validates: \(error)")
            }
            FuzzCheck.expect(back.kind == event.kind, "kind changed through rendering")
            var aps = event.aps
            aps["timestamp"] = .int(ts)
            FuzzCheck.expect(sameValue(.object(back.aps), .object(aps)), "aps changed through rendering")
        }
        _ = event.effectivePriority
    }
}

extension PublishTarget {
    /// Equal trees, numbers compared by value across `.int` and `.double`.
    static func sameValue(_ a: JSON, _ b: JSON) -> Bool {
        switch (a, b) {
        case (.int(let x), .double(let y)), (.double(let y), .int(let x)): return Double(x) == y
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { sameValue($0, $1) }
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.allSatisfy { k, v in y[k].map { sameValue(v, $0) } ?? false }
        default: return a == b
        }
    }
}
