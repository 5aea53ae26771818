import Foundation
import HeraldAPNS
import HeraldCore
import HeraldNet

/// Channel management on APNs (reference §5): create, read, delete, list — synchronous
/// calls over a management pool, for the API thread that creates or closes a channel.
/// Each call goes out on the pool of the team that owns its bundle (APNs binds a
/// connection to one team, reference §1.3).
public final class APNSChannelManager: Sendable {
    let pools: @Sendable (String) -> APNSClientPool?
    let timeout: Double

    /// One pool for every bundle.
    public init(pool: APNSClientPool, timeout: Double = 30) {
        self.pools = { _ in pool }
        self.timeout = timeout
    }

    /// The pool for each bundle from `pools` (nil: no team covers it, or it cannot open).
    public init(pools: @escaping @Sendable (String) -> APNSClientPool?, timeout: Double = 30) {
        self.pools = pools
        self.timeout = timeout
    }

    /// Why a management call failed.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        case rejected(status: Int, reason: String)
        case unavailable(String)

        public var description: String {
            switch self {
            case .rejected(let s, let r): "APNs refused the channel request: \(r) (\(s))"
            case .unavailable(let m): "APNs channel management is unavailable: \(m)"
            }
        }
    }

    /// Creates a channel; returns APNs' `apns-channel-id`, stored verbatim (§8.17).
    public func create(bundleID: String, storagePolicy: Int) throws(Failure) -> String {
        let r = try call(
            bundleID: bundleID, method: "POST", path: APNSRequests.channelsPath(bundleID: bundleID), channelID: nil,
            body: APNSRequests.createChannelBody(storagePolicy: storagePolicy))
        guard r.status == 201, let id = r.header("apns-channel-id"), !id.isEmpty else {
            throw .rejected(status: r.status, reason: "no apns-channel-id in the answer")
        }
        return id
    }

    /// Deletes a channel. A channel APNs no longer knows counts as deleted.
    public func delete(bundleID: String, channelID: String) throws(Failure) {
        do {
            _ = try call(
                bundleID: bundleID, method: "DELETE", path: APNSRequests.channelsPath(bundleID: bundleID), channelID: channelID, body: nil)
        } catch .rejected(_, let reason) where reason == "ChannelNotRegistered" {
            return
        }
    }

    /// The storage policy APNs has for a channel.
    public func read(bundleID: String, channelID: String) throws(Failure) -> Int {
        let r = try call(
            bundleID: bundleID, method: "GET", path: APNSRequests.channelsPath(bundleID: bundleID), channelID: channelID, body: nil)
        guard let p = (try? JSON.parse(r.body))?["message-storage-policy"]?.intValue else {
            throw .rejected(status: r.status, reason: "unreadable answer")
        }
        return Int(p)
    }

    /// Every channel id APNs has for the bundle (`all-channels`, reference §5). An answer
    /// without a `channels` array is a failure, never an empty list: reconciliation would
    /// take every channel for lost.
    public func list(bundleID: String) throws(Failure) -> [String] {
        let r = try call(
            bundleID: bundleID, method: "GET", path: APNSRequests.allChannelsPath(bundleID: bundleID), channelID: nil, body: nil)
        guard let items = (try? JSON.parse(r.body))?["channels"]?.arrayValue else {
            throw .rejected(status: r.status, reason: "unreadable all-channels answer")
        }
        return items.compactMap(\.stringValue)
    }

    private func call(bundleID: String, method: String, path: String, channelID: String?, body: [UInt8]?) throws(Failure)
        -> HTTP2Response
    {
        guard let pool = pools(bundleID) else {
            throw .unavailable("no APNs connection for bundle '\(bundleID)' (no team covers it, or its pool cannot open)")
        }
        let waiter = Waiter()
        var fields = HeaderList()
        if let channelID { fields.append("apns-channel-id", channelID) }
        fields.append("apns-request-id", Identifiers.lowercaseUUID(), noIndex: true)
        let template = APNSTemplate(method: method, headers: HeaderList(), body: body.map { HTTP2Body($0) }, sink: waiter)
        pool.submit([APNSRequest(path: path, headers: fields, template: template)])
        guard let result = waiter.wait(timeout) else {
            template.cancel()
            throw .unavailable("no answer within \(Int(timeout)) s")
        }
        switch result {
        case .outcome(.delivered, let resp?): return resp
        case .outcome(let o, let resp):
            let reason = resp.flatMap { try? JSON.parse($0.body) }?["reason"]?.stringValue ?? o.label
            throw .rejected(status: resp?.status ?? 0, reason: reason)
        case .exhausted(let o): throw .unavailable("retries exhausted (\(o.label))")
        case .cancelled: throw .unavailable("cancelled")
        }
    }

    final class Waiter: APNSResultSink, @unchecked Sendable {
        // @unchecked: `result` is guarded by `cond`.
        let cond = NSCondition()
        var result: APNSResult?

        func apnsCompleted(_ request: APNSRequest, result: APNSResult) {
            cond.lock()
            self.result = result
            cond.broadcast()
            cond.unlock()
        }

        func wait(_ timeout: Double) -> APNSResult? {
            let deadline = Date(timeIntervalSinceNow: timeout)
            cond.lock()
            defer { cond.unlock() }
            while result == nil { if !cond.wait(until: deadline) { break } }
            return result
        }
    }
}
