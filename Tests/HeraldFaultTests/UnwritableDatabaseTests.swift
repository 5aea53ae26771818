import Foundation
import HeraldCore
import HeraldSQL
import HeraldSimulator
import HeraldTestSupport
import Testing

/// Issue #6, "Faults": the database's storage stops taking writes under a running
/// `herald serve` — a full file system (a real tmpfs filled to the last byte) and files
/// made immutable (`chattr +i`, the kernel refuses every write). Publishing answers 503
/// with a JSON error and `Retry-After`, nothing acknowledged is lost, every acknowledged
/// event still ends, and the server takes writes again once the storage is back — without
/// a restart.
extension FaultTests {
    @Suite struct UnwritableDatabase {
        @Test(
            .enabled(
                if: UnwritableStorage.Tmpfs.possible,
                "mounting a tmpfs needs root with CAP_SYS_ADMIN; anImmutableDatabase… covers unwritable storage without it"))
        func aFullDiskAnswers503AndLosesNothingAcknowledged() throws {
            let fs = try UnwritableStorage.Tmpfs(megabytes: 16)
            defer { fs.unmount() }
            let filler = fs.path + "/filler"
            try Self.scenario(
                db: fs.path + "/herald.db",
                takeAway: {
                    let bytes = UnwritableStorage.fill(filler)
                    print("disk: filled the tmpfs with \(bytes / 1024) KiB")
                },
                giveBack: { try FileManager.default.removeItem(atPath: filler) })
        }

        @Test(
            .enabled(
                if: UnwritableStorage.immutableFlagWorks,
                "chattr +i is missing or not enforced on this file system (overlayfs, tmpfs)"))
        func anImmutableDatabaseAnswers503AndRecovers() throws {
            let dir = NSTemporaryDirectory() + "herald-immutable-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let db = dir + "/herald.db"
            let files = [db, db + "-wal"]
            defer {
                UnwritableStorage.setImmutable(false, files)
                try? FileManager.default.removeItem(atPath: dir)
            }
            try Self.scenario(
                db: db,
                takeAway: { #expect(UnwritableStorage.setImmutable(true, files)) },
                giveBack: { #expect(UnwritableStorage.setImmutable(false, files)) })
        }

        /// The shared story: publish, lose the storage, publish until refused, get it back,
        /// publish again; then every acknowledged event ends and is in the database.
        static func scenario(db: String, takeAway: () throws -> Void, giveBack: () throws -> Void) throws {
            let h = try ServedHerald(db: db) {
                $0.maxConcurrentStreams = 50
                $0.faults.latency = 0.005
            }
            try h.channel("disk")
            let tokens = makeTokens(20_000, seed: 801)
            try h.subscribe("disk", tokens)
            var acknowledged = [try h.publishAccepted("disk", update(1))]
            // The storage goes while that event is being sent.
            #expect(Poll.until(timeout: 30, interval: 0.002) { h.sim.sim.stats().accepted >= 1_000 })
            try takeAway()
            // A few publishes may still fit in pages SQLite already has; then it refuses.
            var refusal: APIResponse?
            for i in 0..<2_000 {
                let r = try h.publish("disk", update(100 + i))
                if r.status == 202, let id = r.json?["event_id"]?.stringValue {
                    acknowledged.append(id)
                    continue
                }
                refusal = r
                break
            }
            let r = try #require(refusal, "the database never refused a write")
            print("disk: refused after \(acknowledged.count) accepted: \(r.status) \(r.text)")
            #expect(r.status == 503)
            #expect(r.errorCode == "unavailable")
            #expect(r.header("content-type")?.hasPrefix("application/json") == true)
            #expect((Int(r.header("retry-after") ?? "") ?? 0) >= 1)
            #expect(!(r.errorMessage ?? "").isEmpty)
            // Registrations are refused the same way; reads go on.
            let token = makeTokens(1, seed: 802)[0]
            let sub = try h.serve.send("PUT", "/v1/channels/disk/subscriptions/\(token)", json: ["kind": "activity"])
            #expect(sub.status == 503)
            #expect(sub.errorCode == "unavailable")
            #expect(try h.serve.send("GET", "/v1/channels/disk/events/\(acknowledged[0])").status == 200)
            #expect(try h.serve.send("GET", "/healthz").status == 200)
            #expect(try h.serve.metrics().sum("herald_db_commits_failed_total") > 0)
            // The fan-out goes on without checkpoints, and its end cannot be recorded yet.
            #expect(Poll.until(timeout: 30) { h.serve.output.contains("\"fanout.finish_failed\"") })
            #expect(h.serve.output.contains("\"fanout.checkpoint_failed\""))
            #expect(try h.serve.send("GET", "/v1/channels/disk/events/\(acknowledged.last!)").json?["state"]?.stringValue == "sending")

            try giveBack()
            // Writes come back without a restart; the client retries after Retry-After.
            var recovered: APIResponse?
            let back = Poll.until(timeout: 30, interval: 0.1) {
                guard let r = try? h.publish("disk", update(999)) else { return false }
                if r.status == 202 { recovered = r }
                return r.status == 202 || (r.status != 503 && r.status != 429)
            }
            #expect(back && recovered != nil, "the server did not take writes again")
            let last = try #require(recovered?.json?["event_id"]?.stringValue)
            acknowledged.append(last)

            // Every acknowledged event ends, without a restart; the last reaches everyone.
            for id in acknowledged {
                let e = try h.serve.waitEvent("disk", id, timeout: 60)
                #expect(e != nil, "event \(id) never ended")
            }
            let lastEvent = try #require(try h.serve.send("GET", "/v1/channels/disk/events/\(last)").json)
            #expect(lastEvent["state"]?.stringValue == "done")
            let latest = try #require(h.sim.sim.pushes(to: tokens[0]).last)
            #expect(latest.json?["aps"]?["content-state"]?["home"]?.intValue == 999)
            let lacking = tokens.filter { h.sim.sim.pushes(to: $0).last?.payload != latest.payload }
            #expect(lacking.isEmpty, "\(lacking.count) subscribers lack the last state")
            #expect(try h.subscriberCount("disk") == Int64(tokens.count))

            // Nothing acknowledged was lost: after a SIGKILL the database has every event.
            h.serve.kill()
            let check = try Database(path: db)
            defer { check.close() }
            #expect(try check.integrityCheck() == "ok")
            let stored = Set(try check.read { c in try c.query("SELECT id FROM events") }.compactMap { $0[0].textValue })
            let lost = acknowledged.filter { !stored.contains($0) }
            #expect(lost.isEmpty, "acknowledged but not stored: \(lost)")
        }
    }
}
