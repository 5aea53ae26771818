import Foundation
import HeraldFanout
import HeraldSender
import HeraldTestSupport
import Testing

extension Hostile {
    /// Objects that register metrics samplers must still be freed while the registry lives:
    /// the registry keeps the sampler, and their metrics keep the registry (LeakSanitizer
    /// reported every pool and engine of the test suite as leaked; scripts/sanitizers).
    @Suite struct LeakRegressions {
        @Test func aShutDownPoolIsFreedWhileItsMetricsRegistryLives() throws {
            let sim = try SimFixture()
            weak var weakPool: APNSClientPool?
            do {
                let (pool, _) = try sim.pool(connections: 1)
                weakPool = pool
                pool.shutdown()
            }
            #expect(ServedHerald.eventually(timeout: 5) { weakPool == nil })
            _ = sim.metrics
        }

        @Test func aStoppedEngineAndItsPoolsAreFreed() throws {
            weak var weakEngine: FanoutEngine?
            weak var weakPool: APNSClientPool?
            do {
                let f = try FanoutFixture(connections: 1)
                weakEngine = f.engine
                weakPool = f.pool
            }
            #expect(ServedHerald.eventually(timeout: 5) { weakEngine == nil }, "engine alive")
            #expect(ServedHerald.eventually(timeout: 5) { weakPool == nil }, "pool alive")
        }
    }
}
