import Glibc

/// Waiting for SIGINT or SIGTERM with `sigwait`: the signals are blocked first (threads
/// started afterwards inherit the mask), so they stay pending until `waitForTermination`
/// takes them, and the shutdown runs on an ordinary thread, not in a signal handler.
enum SignalWait {
    private static func terminationSet() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        return set
    }

    /// Blocks SIGINT and SIGTERM in the calling thread. Call before starting any thread.
    static func blockTerminationSignals() {
        var set = terminationSet()
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Waits until SIGINT or SIGTERM arrives; returns its number.
    static func waitForTermination() -> Int32 {
        var set = terminationSet()
        var signal: Int32 = 0
        while sigwait(&set, &signal) != 0 {}
        return signal
    }
}
