import Foundation
import HeraldCore
import HeraldCrypto
import HeraldNet

extension SimulatorHandler {
    /// What `apns-push-type` names (reference §3.1), read from the field's bytes.
    enum PushKind { case liveActivity, voip, other }

    static let pushTypeNames: [(StaticString, PushKind)] = [
        ("liveactivity", .liveActivity), ("alert", .other), ("background", .other), ("location", .other), ("voip", .voip),
        ("complication", .other), ("fileprovider", .other), ("mdm", .other), ("pushtotalk", .other), ("widgets", .other),
        ("controls", .other),
    ]

    static func pushKind(_ b: UnsafeBufferPointer<UInt8>) -> PushKind? {
        for (name, kind) in pushTypeNames where b.bytesEqual(name) { return kind }
        return nil
    }

    /// `POST /3/device/<token>` (reference §3). The fields are read as bytes in place (`b`
    /// and `raw` are valid for this call only); the token becomes a String only when
    /// something keys on it (the ledger, dead tokens, faults chosen by the token's hash).
    func tokenPush(
        _ r: HTTP2ServerRequest, _ b: HTTP2ServerRequest.FieldBytes, _ f: SimFields, token raw: UnsafeBufferPointer<UInt8>,
        _ st: SimConnectionState, _ sim: APNSSimulator
    ) -> SimAnswer {
        guard !raw.isEmpty else { return .error(400, "MissingDeviceToken") }
        guard raw.count % 2 == 0, SimHex.isHex(raw) else { return .error(400, "BadDeviceToken") }
        guard let topic = SimFields.value(b, f.topic), !topic.isEmpty else { return .error(400, "MissingTopic") }
        guard let pushType = SimFields.value(b, f.pushType), let kind = Self.pushKind(pushType) else {
            return .error(400, "InvalidPushType")
        }
        if kind == .liveActivity {
            // Live Activity pushes go to `<bundleID>.push-type.liveactivity` (§3.1).
            let suffix: StaticString = ".push-type.liveactivity"
            guard topic.bytesHaveSuffix(suffix), topic.count > suffix.utf8CodeUnitCount else { return .error(400, "BadTopic") }
        }
        var priority: UInt8 = 10
        if let p = SimFields.value(b, f.priority) {
            if p.bytesEqual("10") {
                priority = 10
            } else if p.bytesEqual("5") {
                priority = 5
            } else if p.bytesEqual("1") && kind != .liveActivity {
                priority = 1
            } else {
                return .error(400, "BadPriority")
            }
        }
        if let e = SimFields.value(b, f.expiration) {
            // A short value makes a String without allocating.
            guard let v = Int64(String(decoding: e, as: UTF8.self)), v >= 0 else { return .error(400, "BadExpirationDate") }
        }
        // An `apns-id` that is not a lower-case UUID is not echoed (`SimFields.echo`).
        if f.id >= 0 && f.echo != f.id { return .error(400, "BadMessageId") }
        if let cid = SimFields.value(b, f.collapseID), cid.count > 64 { return .error(400, "BadCollapseId") }
        if r.bodySize == 0 { return .error(400, "PayloadEmpty") }
        let limit = kind == .voip ? 5120 : 4096
        if r.bodySize > limit { return .error(413, "PayloadTooLarge") }
        let record = sim.config.recordLedger
        guard record || !st.deadTokens.isEmpty || st.faults.deadTokenRate > 0 || st.faults.badTokenRate > 0 else {
            // The benchmark's path (`--no-ledger`, no token faults): counted on the connection.
            st.counts.accepted += 1
            return SimAnswer(status: 200)
        }
        let text = String(decoding: raw, as: UTF8.self)
        let token = raw.contains(where: { $0 >= 65 && $0 <= 70 }) ? text.lowercased() : text
        if st.faults.isBad(token) { return .error(400, "BadDeviceToken") }
        if let since = st.deadTokens[token] {
            var a = SimAnswer.error(410, "Unregistered")
            a.timestamp = since
            return a
        }
        if st.faults.isDead(token) {
            var a = SimAnswer.error(410, "Unregistered")
            a.timestamp = sim.config.clock.nowMillis()
            return a
        }
        if record {
            let now = sim.config.clock.now()
            sim.state.withLock { $0.ledger.recordToken(token, body: r.body, priority: priority, at: now) }
        } else {
            st.counts.accepted += 1
        }
        return SimAnswer(status: 200)
    }

    /// `POST /4/broadcasts/apps/<bundleID>` (reference §4).
    func broadcast(_ r: HTTP2ServerRequest, bundle: String, _ sim: APNSSimulator) -> SimAnswer {
        if bundle.contains(".push-type.") { return .error(400, "TopicDisallowed") }
        guard let channel = r.header("apns-channel-id"), !channel.isEmpty else { return .error(400, "MissingChannelId") }
        guard Data(base64Encoded: channel) != nil else { return .error(400, "BadChannelId") }
        guard let pushType = r.header("apns-push-type") else { return .error(400, "MissingPushType") }
        guard pushType.lowercased() == "liveactivity" else { return .error(400, "InvalidPushType") }
        guard let expText = r.header("apns-expiration"), let exp = Int64(expText), exp >= 0 else {
            return .error(400, "BadExpirationDate")
        }
        guard let p = r.header("apns-priority"), ["1", "5", "10"].contains(p), let priority = UInt8(p) else {
            return .error(400, "BadPriority")
        }
        if let id = r.header("apns-request-id"), !Identifiers.isLowercaseUUID(id) { return .error(400, "BadMessageId") }
        if r.bodySize == 0 { return .error(400, "PayloadEmpty") }
        if r.bodySize > 5120 { return .error(413, "PayloadTooLarge") }
        return sim.state.withLock { s -> SimAnswer in
            guard let ch = s.channels[channel], ch.bundleID == bundle else { return .error(400, "ChannelNotRegistered") }
            // A no-storage channel takes only expiration 0 (§4.2).
            if ch.storagePolicy == 0 && exp != 0 { return .error(400, "BadExpirationDate") }
            s.ledger.recordChannel(channel, body: r.body, priority: priority, at: sim.config.clock.now())
            return SimAnswer(status: 200)
        }
    }

    /// `POST|GET|DELETE /1/apps/<bundleID>/channels` (reference §5).
    func manageChannel(_ r: HTTP2ServerRequest, bundle: String, _ sim: APNSSimulator) -> SimAnswer {
        switch r.method {
        case "POST":
            guard let json = try? JSON.parse(r.body), let o = json.objectValue else { return .error(400, "BadRequestPayload") }
            for k in o.keys where k != "message-storage-policy" && k != "push-type" { return .error(400, "BadRequestParams") }
            guard let pt = o["push-type"]?.stringValue else { return .error(400, "MissingPushType") }
            guard pt == "LiveActivity" else { return .error(400, "InvalidPushType") }
            guard let policy = o["message-storage-policy"]?.intValue, policy == 0 || policy == 1 else {
                return .error(400, "BadRequestParams")
            }
            let id = Data(SecureRandom.bytes(16)).base64EncodedString()
            return sim.state.withLock { s -> SimAnswer in
                let count = s.channels.values.filter { $0.bundleID == bundle }.count
                guard count < sim.config.maxChannelsPerBundle else { return .error(400, "CannotCreateChannelConfig") }
                s.channels[id] = APNSSimulator.SimChannel(bundleID: bundle, storagePolicy: Int(policy), createdAt: sim.config.clock.now())
                var a = SimAnswer(status: 201)
                a.headers.append(("apns-channel-id", id))
                return a
            }
        default:
            guard let id = r.header("apns-channel-id"), !id.isEmpty else { return .error(400, "MissingChannelId") }
            guard Data(base64Encoded: id) != nil else { return .error(400, "BadChannelId") }
            return sim.state.withLock { s -> SimAnswer in
                guard let ch = s.channels[id], ch.bundleID == bundle else { return .error(400, "ChannelNotRegistered") }
                if r.method == "DELETE" {
                    s.channels[id] = nil
                    return SimAnswer(status: 204)
                }
                var a = SimAnswer(status: 200)
                a.body = JSON.object(["message-storage-policy": .int(Int64(ch.storagePolicy)), "push-type": "LiveActivity"]).encoded()
                a.headers.append(("content-type", "application/json"))
                return a
            }
        }
    }

    /// `GET /1/apps/<bundleID>/all-channels`.
    func listChannels(bundle: String, _ sim: APNSSimulator) -> SimAnswer {
        let ids = sim.state.withLock { s in s.channels.filter { $0.value.bundleID == bundle }.map(\.key).sorted() }
        var a = SimAnswer(status: 200)
        a.body = JSON.object(["channels": .array(ids.map { .string($0) })]).encoded()
        a.headers.append(("content-type", "application/json"))
        return a
    }
}
