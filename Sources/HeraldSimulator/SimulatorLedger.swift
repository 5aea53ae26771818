import Foundation
import HeraldCore

/// What the simulator accepted: per token and per channel, the payloads in arrival order.
/// Payload bytes are interned (every push of one event shares the same bytes), so a
/// million-token ledger costs a few bytes per push. Not thread-safe: the simulator guards
/// it with its lock.
struct SimulatorLedger {
    struct Entry: Sendable, Equatable {
        var payload: Int32
        var priority: UInt8
        /// When the simulator accepted it (seconds since 1970): publish→push latency.
        var receivedAt: Double
    }

    var payloads: [[UInt8]] = []
    var payloadIndex: [[UInt8]: Int32] = [:]
    var tokens: [String: [Entry]] = [:]
    var channels: [String: [Entry]] = [:]
    var accepted = 0
    var broadcasts = 0
    var responses: [Int: Int] = [:]
    var requests = 0

    mutating func intern(_ body: [UInt8]) -> Int32 {
        if let i = payloadIndex[body] { return i }
        let i = Int32(payloads.count)
        payloads.append(body)
        payloadIndex[body] = i
        return i
    }

    mutating func recordToken(_ token: String, body: [UInt8], priority: UInt8, at time: Double) {
        let e = Entry(payload: intern(body), priority: priority, receivedAt: time)
        tokens[token, default: []].append(e)
        accepted += 1
    }

    mutating func recordChannel(_ channel: String, body: [UInt8], priority: UInt8, at time: Double) {
        let e = Entry(payload: intern(body), priority: priority, receivedAt: time)
        channels[channel, default: []].append(e)
        broadcasts += 1
    }
}

/// One push as the ledger shows it.
public struct LedgerPush: Sendable, Equatable {
    public var payload: [UInt8]
    public var priority: Int
    /// When the simulator accepted it, seconds since 1970.
    public var receivedAt: Double = 0

    /// The payload parsed as JSON (nil if it was not JSON).
    public var json: JSON? { try? JSON.parse(payload) }
    /// `aps.timestamp` of the payload.
    public var timestamp: Int64? { json?["aps"]?["timestamp"]?.intValue }
    /// `aps.event` of the payload.
    public var event: String? { json?["aps"]?["event"]?.stringValue }
}

/// Counters of the simulator.
public struct SimulatorStats: Sendable, Equatable {
    /// Token pushes accepted (200).
    public var accepted: Int
    /// Broadcast pushes accepted (200).
    public var broadcasts: Int
    /// Distinct tokens that received at least one push.
    public var tokens: Int
    /// Requests seen, and answers by status.
    public var requests: Int
    public var responses: [Int: Int]
    /// Connections open now and ever accepted.
    public var openConnections: Int
    public var connections: Int
    /// Channels that exist.
    public var channels: Int

    public var json: JSON {
        .object([
            "accepted": .int(Int64(accepted)), "broadcasts": .int(Int64(broadcasts)), "tokens": .int(Int64(tokens)),
            "requests": .int(Int64(requests)),
            "responses": .object(Dictionary(uniqueKeysWithValues: responses.map { (String($0.key), JSON.int(Int64($0.value))) })),
            "open_connections": .int(Int64(openConnections)), "connections": .int(Int64(connections)),
            "channels": .int(Int64(channels)),
        ])
    }
}
