import Foundation

/// The process's open-file limit (RLIMIT_NOFILE).
enum FileLimit {
    /// RLIM_INFINITY (the C macro is `((rlim_t) -1)`, which Swift cannot import).
    static let unlimited = rlim_t.max

    struct Raised: Equatable {
        /// The soft limit before and after raising it.
        var before: Int
        var soft: Int
        var hard: Int
    }

    /// Raises the soft limit to the hard one (only the soft limit is the process's own to
    /// change). A hard limit of "unlimited" means the kernel's per-process maximum
    /// (/proc/sys/fs/nr_open). If raising fails, the soft limit stays as it was.
    static func raiseSoftToHard() -> Raised {
        var rl = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &rl) == 0 else { return Raised(before: 1024, soft: 1024, hard: 1024) }
        let before = Int(clamping: rl.rlim_cur)
        var hard = rl.rlim_max
        if hard == unlimited {
            let nrOpen = (try? String(contentsOfFile: "/proc/sys/fs/nr_open", encoding: .utf8))
                .flatMap { rlim_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            hard = nrOpen ?? 1 << 20
        }
        if rl.rlim_cur < hard {
            var raised = rl
            raised.rlim_cur = hard
            if setrlimit(resource, &raised) == 0 { return Raised(before: before, soft: Int(clamping: hard), hard: Int(clamping: hard)) }
        }
        return Raised(before: before, soft: before, hard: Int(clamping: hard))
    }

    /// The hard limit, without changing anything (for --check-config).
    static var hard: Int {
        var rl = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &rl) == 0 else { return 1024 }
        return rl.rlim_max == unlimited ? 1 << 20 : Int(clamping: rl.rlim_max)
    }
}
