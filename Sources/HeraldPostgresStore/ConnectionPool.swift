import Foundation
import HeraldCore
import HeraldPostgres

/// Connections to one database shared by the threads that call the store: a caller takes
/// an idle connection (or opens one, up to `capacity`; beyond, it waits), uses it alone,
/// and gives it back. A connection that lost its session is closed, not given back.
final class ConnectionPool: Sendable {
    /// One connection, owned by whoever took it from the pool (a connection belongs to
    /// one thread at a time; the pool's lock hands it over).
    final class Slot: @unchecked Sendable {
        let connection: PostgresConnection
        init(_ c: PostgresConnection) { connection = c }
    }

    private struct State {
        var idle: [Slot] = []
        var open = 0
        var closed = false
    }

    let options: PostgresOptions
    let capacity: Int
    private let state = Locked(State())
    private let freed = NSCondition()

    init(options: PostgresOptions, capacity: Int) {
        self.options = options
        self.capacity = max(1, capacity)
    }

    /// Runs `body` on a connection of the pool. - Throws: what `body` throws, or the
    /// `PostgresError` of opening a connection.
    func with<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let slot = try take()
        do {
            let r = try body(slot.connection)
            give(slot)
            return r
        } catch {
            give(slot)
            throw error
        }
    }

    /// A connection of its own, outside the pool (a scanner's, the fan-out thread's).
    func openDedicated() throws(PostgresError) -> PostgresConnection { try PostgresConnection(options) }

    private func take() throws -> Slot {
        freed.lock()
        defer { freed.unlock() }
        while true {
            let got: Slot?? = try state.withLock { s throws(PostgresError) in
                if s.closed { throw PostgresError(kind: .connection, message: "the store is closed") }
                if let slot = s.idle.popLast() { return .some(slot) }
                if s.open < capacity {
                    s.open += 1
                    return .some(nil)
                }
                return nil
            }
            switch got {
            case .some(.some(let slot)): return slot
            case .some(.none):
                do {
                    return Slot(try PostgresConnection(options))
                } catch {
                    state.withLock { $0.open -= 1 }
                    throw error
                }
            case .none: freed.wait()
            }
        }
    }

    private func give(_ slot: Slot) {
        let keep = slot.connection.isConnected && !slot.connection.isInTransaction
        let close = state.withLock { s -> Bool in
            if keep && !s.closed {
                s.idle.append(slot)
                return false
            }
            s.open -= 1
            return true
        }
        if close { slot.connection.close() }
        freed.lock()
        freed.signal()
        freed.unlock()
    }

    /// Closes the idle connections; connections in use are closed when given back; every
    /// later call fails as if the database were unreachable.
    func close() {
        let idle = state.withLock { s -> [Slot] in
            s.closed = true
            s.open -= s.idle.count
            defer { s.idle.removeAll() }
            return s.idle
        }
        for slot in idle { slot.connection.close() }
    }
}
