import Foundation
import HeraldCore

/// `herald subs import CHANNEL FILE`: streams a token file through the batch route.
enum SubsImport {
    struct Totals {
        var tokens = 0
        var subscribed: Int64 = 0
        var updated: Int64 = 0
    }

    static func run(_ args: inout Arguments, _ opts: AdminOptions, _ console: Console) throws -> Int32 {
        let entry = try SubsCommand.Entry.read(&args)
        let batchSize = try args.intOption("--batch-size", range: 1...100_000) ?? 10_000
        let catchUp = !args.flag("--no-catch-up")
        let channel = try args.positional("CHANNEL")
        let file = try args.positional("FILE (a path, or - for standard input)")
        try args.finish()
        let client = try opts.client()
        let reader = try TokenLines(path: file)
        let progress = LiveLine(console: console)
        defer { progress.finish() }
        var totals = Totals()
        var meter = RateMeter()
        let started = Monotonic.seconds()
        var batch: [(line: Int, token: String)] = []
        batch.reserveCapacity(batchSize)
        while true {
            let next = try reader.next()
            if let next { batch.append(next) }
            if batch.count == batchSize || (next == nil && !batch.isEmpty) {
                try send(batch, entry, catchUp: catchUp, channel, client, reader.name, &totals)
                batch.removeAll(keepingCapacity: true)
                let now = Monotonic.seconds()
                meter.record(Int64(totals.tokens), at: now)
                progress.update(progressText(totals, reader, meter), now: now)
            }
            if next == nil { break }
        }
        progress.finish()
        let seconds = Monotonic.seconds() - started
        let rate = seconds > 0 ? Double(totals.tokens) / seconds : 0
        if opts.json {
            console.print(
                TextOutput.prettyJSON([
                    "channel": .string(channel), "tokens": .int(Int64(totals.tokens)), "subscribed": .int(totals.subscribed),
                    "updated": .int(totals.updated), "seconds": .double((seconds * 1000).rounded() / 1000),
                ]))
        } else {
            console.print(
                "imported \(TextOutput.count(totals.tokens)) tokens into \(channel) in \(TextOutput.duration(seconds)) "
                    + "(\(TextOutput.count(Int64(rate.rounded()))) tokens/s): \(TextOutput.count(totals.subscribed)) new, "
                    + "\(TextOutput.count(totals.updated)) already subscribed")
        }
        return ExitCode.ok
    }

    /// Posts one batch. A 422 becomes a message naming the line of the first bad token.
    static func send(
        _ batch: [(line: Int, token: String)], _ entry: SubsCommand.Entry, catchUp: Bool, _ channel: String,
        _ client: AdminClient, _ fileName: String, _ totals: inout Totals
    ) throws {
        var fields: [String: JSON] = ["subscribe": .array(batch.map { entry.json(token: $0.token) })]
        if !catchUp { fields["catch_up"] = .bool(false) }
        let body = JSON.object(fields)
        let reply = try client.exchange("POST", SubsCommand.batchPath(channel), body: body)
        if reply.status == 422, let (code, message) = reply.apiError {
            let before =
                "\(TextOutput.count(totals.tokens)) tokens from earlier lines were imported; "
                + "nothing from this batch or later lines was"
            if let i = badIndex(in: message), batch.indices.contains(i) {
                throw CommandFailure(
                    "\(fileName) line \(batch[i].line): token '\(batch[i].token)' refused: \(message) (HTTP 422 \(code)). \(before).")
            }
            throw CommandFailure(
                "\(fileName) lines \(batch.first!.line)-\(batch.last!.line): \(message) (HTTP 422 \(code)). \(before).")
        }
        guard reply.isSuccess else { throw client.failure(reply) }
        totals.tokens += batch.count
        totals.subscribed += reply.json?["subscribed"]?.intValue ?? 0
        totals.updated += reply.json?["updated"]?.intValue ?? 0
    }

    /// The entry index a 422 message names: `subscribe[12]`, `index 12`, or else its first
    /// whole number.
    static func badIndex(in message: String) -> Int? {
        let patterns = [#"\[(\d+)\]"#, #"index (\d+)"#, #"(\d+)"#]
        for p in patterns {
            guard let re = try? NSRegularExpression(pattern: p),
                let m = re.firstMatch(in: message, range: NSRange(message.startIndex..., in: message)),
                let r = Range(m.range(at: 1), in: message)
            else { continue }
            return Int(message[r])
        }
        return nil
    }

    static func progressText(_ totals: Totals, _ reader: TokenLines, _ meter: RateMeter) -> String {
        var s = "importing  \(TextOutput.count(totals.tokens)) tokens"
        if let size = reader.size, size > 0 {
            s += " (\(min(100, reader.position * 100 / size))%)"
        }
        if let rate = meter.perSecond { s += "  \(TextOutput.count(Int64(rate.rounded())))/s" }
        return s
    }
}
