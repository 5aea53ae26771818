import Foundation
import HeraldTestSupport
import Testing

@testable import HeraldAPNS
@testable import HeraldCore
@testable import HeraldCrypto
@testable import HeraldNet
@testable import HeraldSender
@testable import HeraldSimulator

/// Sends `tokens` with one template and waits for every result.
func send(_ pool: APNSClientPool, _ tokens: [String], body: [UInt8] = updatePayload(1_767_225_600), timeout: Double = 60) -> ResultCollector
{
    let sink = ResultCollector()
    pool.submit(requests(tokens, tokenTemplate(sink, body: body)))
    sink.wait(for: tokens.count, timeout: timeout)
    return sink
}

@Suite struct PoolOutcomeTests {
    @Test func eachAnswerClassReachesTheCallerAsItsOutcome() throws {
        let fx = try SimFixture()
        let (pool, _) = try fx.pool()
        defer { pool.shutdown() }
        let ok = makeTokens(1, seed: 1)[0]
        let dead = makeTokens(1, seed: 2)[0]
        fx.sim.markDead([dead], sinceMillis: 1_767_225_600_123)
        let r = send(pool, [ok, dead, "zz"]).outcomes()
        guard case .outcome(.delivered(let apnsID, let unique), _) = r[0] else {
            Issue.record("\(String(describing: r[0]))")
            return
        }
        #expect(apnsID.map(Identifiers.isLowercaseUUID) == true)
        #expect(unique != nil)
        guard case .outcome(.dropToken(.unregistered, let since), _) = r[1] else {
            Issue.record("\(String(describing: r[1]))")
            return
        }
        #expect(since == 1_767_225_600_123, "410 carries APNs' timestamp in ms")
        guard case .outcome(.dropToken(.badDeviceToken, nil), _) = r[2] else {
            Issue.record("\(String(describing: r[2]))")
            return
        }
        // 413: a body over 4096 bytes fails the event, no retry.
        let big = JSON.object([
            "aps": .object(["event": "update", "content-state": .object(["pad": .string(String(repeating: "x", count: 4100))])])
        ]).encoded()
        let s = send(pool, [ok], body: big)
        guard case .outcome(.failEvent(.payloadTooLarge, 413), _) = s.outcomes()[0] else {
            Issue.record("\(String(describing: s.outcomes()[0]))")
            return
        }
        #expect(s.attempts[0] == 1)
    }

    @Test func serverErrorsAreRetriedWithBackoffUntilTheyPassOrRunOut() throws {
        let fx = try SimFixture { $0.faults.errorRates = [503: 1.0] }
        let (pool, _) = try fx.pool { $0.retry = RetryPolicy(maxAttempts: 3, backoff: Backoff(base: 0.01, cap: 0.05)) }
        defer { pool.shutdown() }
        let out = send(pool, makeTokens(5, seed: 3))
        for i in 0..<5 {
            guard case .exhausted(.retry(.serviceUnavailable, 503, _)) = out.outcomes()[i] else {
                Issue.record("\(String(describing: out.outcomes()[i]))")
                continue
            }
            #expect(out.attempts[i] == 3)
        }
        // Half the answers fail: every push still gets through, some after retries.
        var f = SimulatorFaults()
        f.errorRates = [500: 0.3, 503: 0.2]
        fx.sim.setFaults(f)
        let (pool2, _) = try fx.pool { $0.retry = RetryPolicy(maxAttempts: 20, backoff: Backoff(base: 0.001, cap: 0.01)) }
        defer { pool2.shutdown() }
        let tokens = makeTokens(500, seed: 4)
        let r = send(pool2, tokens)
        #expect(r.outcomes().values.allSatisfy { if case .outcome(.delivered, _) = $0 { true } else { false } })
        #expect(r.attempts.values.contains { $0 > 1 })
        #expect(Set(fx.sim.tokenCounts().keys).isSuperset(of: tokens))
    }

    @Test func retryAfterIsAFloorOnTheBackoff() throws {
        let fx = try SimFixture {
            $0.faults.errorRates = [429: 1.0]
            $0.faults.retryAfter = 1
        }
        let (pool, _) = try fx.pool { $0.retry = RetryPolicy(maxAttempts: 5, backoff: Backoff(base: 0.001, cap: 0.01)) }
        defer { pool.shutdown() }
        let sink = ResultCollector()
        let start = Date()
        pool.submit(requests([makeTokens(1, seed: 5)[0]], tokenTemplate(sink, body: updatePayload(1))))
        // Once the first 429 came back, APNs recovers.
        while fx.sim.stats().responses[429, default: 0] < 1 { usleep(1000) }
        fx.sim.setFaults(SimulatorFaults())
        #expect(sink.wait(for: 1, timeout: 10))
        #expect(Date().timeIntervalSince(start) >= 1.0, "retried before Retry-After")
        guard case .outcome(.delivered, _) = sink.outcomes()[0] else {
            Issue.record("not delivered")
            return
        }
    }

    @Test func aJWTFromTheWrongKeyFailsTheConfigurationWithoutRetrying() throws {
        let fx = try SimFixture()
        let wrong = APNSCredentials(keyID: fx.files.keyID, teamID: fx.files.teamID, key: try P256PrivateKey.generate())
        let (pool, _) = try fx.pool(jwt: JWTProvider(credentials: wrong, logger: .discard))
        defer { pool.shutdown() }
        let r = send(pool, makeTokens(3, seed: 6))
        for i in 0..<3 {
            guard case .outcome(.failConfig(.invalidProviderToken, 403), _) = r.outcomes()[i] else {
                Issue.record("\(String(describing: r.outcomes()[i]))")
                continue
            }
            #expect(r.attempts[i] == 1)
        }
        #expect(fx.sim.stats().accepted == 0)
    }

    @Test func anExpiredJWTIsReSignedOnceAndTheRequestRetried() throws {
        // Herald's clock signs at T0 and is two minutes on; APNs' clock is an hour on, so it
        // finds the token expired. One re-signing (at T0+2min) satisfies it.
        let t0 = SystemClock().now()
        let heraldClock = ManualClock(t0)
        let fx = try SimFixture { $0.clock = ManualClock(t0 + 3660) }
        let provider = JWTProvider(credentials: try fx.credentials(), clock: heraldClock, logger: .discard)
        let first = try provider.current()
        heraldClock.advance(by: 120)
        let (pool, _) = try fx.pool(jwt: provider)
        defer { pool.shutdown() }
        let r = send(pool, [makeTokens(1, seed: 7)[0]])
        guard case .outcome(.delivered, _) = r.outcomes()[0] else {
            Issue.record("\(String(describing: r.outcomes()[0]))")
            return
        }
        #expect(try provider.current().generation == first.generation + 1)
        #expect(fx.sim.stats().responses[403] == 1)
    }

    @Test func aClockFarBehindIsReportedNotLoopedOn() throws {
        // APNs finds every fresh token an hour old: re-signing cannot help; fail, don't loop.
        let fx = try SimFixture { $0.clock = ManualClock(SystemClock().now() + 3660) }
        let (pool, provider) = try fx.pool()
        defer { pool.shutdown() }
        let r = send(pool, [makeTokens(1, seed: 8)[0]])
        guard case .outcome(.failConfig(.expiredProviderToken, 403), _) = r.outcomes()[0] else {
            Issue.record("\(String(describing: r.outcomes()[0]))")
            return
        }
        #expect(fx.sim.stats().responses[403] == 2)
        #expect(try provider.current().generation == 1)
    }

    @Test func theJWTIsRenewedAfterThirtyMinutesAndEachConnectionSwitchesAtMostEveryTwenty() throws {
        let clock = ManualClock()
        let fx = try SimFixture { $0.clock = clock }
        let provider = JWTProvider(credentials: try fx.credentials(), clock: clock, logger: .discard)
        let first = try provider.current()
        clock.advance(by: 25 * 60)
        #expect(try provider.current() == first, "re-signed before 30 minutes")
        let (pool, _) = try fx.pool(connections: 2, jwt: provider)
        defer { pool.shutdown() }
        // The connections adopt the 25-minute-old token now.
        _ = send(pool, makeTokens(10, seed: 8))
        clock.advance(by: 6 * 60)
        // 31 minutes: a new token exists, but the connections adopted theirs 6 minutes ago.
        let r = send(pool, makeTokens(10, seed: 9))
        #expect(r.outcomes().values.allSatisfy { if case .outcome(.delivered, _) = $0 { true } else { false } })
        let second = try provider.current()
        #expect(second.generation == 2)
        #expect(second.issuedAt == first.issuedAt + 31 * 60)
        clock.advance(by: 15 * 60)
        // 46 minutes: twenty since adoption: the connections switch (their token is 46 min old).
        let r2 = send(pool, makeTokens(10, seed: 10))
        #expect(r2.outcomes().values.allSatisfy { if case .outcome(.delivered, _) = $0 { true } else { false } })
        #expect(fx.sim.stats().responses[429] == nil, "the simulator saw a JWT switch within 20 minutes")
        #expect(fx.sim.stats().responses[403] == nil)
    }

    @Test func theSimulatorRefusesAJWTSwitchWithinTwentyMinutes() throws {
        let fx = try SimFixture()
        let (pool, _) = try fx.pool(withoutJWT: true)
        defer { pool.shutdown() }
        let creds = try fx.credentials()
        let now = SystemClock().nowSeconds()
        func withJWT(_ iat: Int64) throws -> [APNSRequest] {
            var h = HeaderList()
            h.append(
                "authorization", "bearer " + (try APNSJWT.sign(keyID: creds.keyID, teamID: creds.teamID, issuedAt: iat, key: creds.key)))
            let sink = ResultCollector()
            return [APNSRequest(path: "/3/device/" + makeTokens(1)[0], headers: h, template: tokenTemplate(sink, body: updatePayload(1)))]
        }
        let a = try withJWT(now - 10)
        pool.submit(a)
        (a[0].template.sink as! ResultCollector).wait(for: 1)
        let b = try withJWT(now)
        pool.submit(b)
        (b[0].template.sink as! ResultCollector).wait(for: 1)
        guard case .exhausted(.retry(.tooManyProviderTokenUpdates, 429, _)) = (b[0].template.sink as! ResultCollector).outcomes()[0] else {
            Issue.record("\(String(describing: (b[0].template.sink as! ResultCollector).outcomes()[0]))")
            return
        }
    }
}
