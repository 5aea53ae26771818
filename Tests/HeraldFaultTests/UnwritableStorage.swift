import Foundation

/// Real ways to take the database's storage away from a running server, for the disk tests.
/// No test-only switch in the product: the kernel refuses the writes.
enum UnwritableStorage {
    /// A tmpfs of `megabytes` mounted on a new temporary directory (needs CAP_SYS_ADMIN, as
    /// root in CI). `unmount()` detaches it.
    struct Tmpfs {
        let path: String

        init(megabytes: Int) throws {
            path = NSTemporaryDirectory() + "herald-tmpfs-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            guard mount("tmpfs", path, "tmpfs", 0, "size=\(megabytes)m,mode=0700") == 0 else {
                let e = errno
                try? FileManager.default.removeItem(atPath: path)
                throw POSIXError(POSIXErrorCode(rawValue: e) ?? .EPERM)
            }
        }

        func unmount() {
            umount2(path, Int32(MNT_DETACH))
            try? FileManager.default.removeItem(atPath: path)
        }

        /// Whether this process may mount a tmpfs (root with CAP_SYS_ADMIN, not in a
        /// restricted container).
        static let possible: Bool = {
            guard let t = try? Tmpfs(megabytes: 1) else { return false }
            t.unmount()
            return true
        }()
    }

    /// Writes zeros to `file` until the file system is full; returns the bytes written.
    static func fill(_ file: String) -> Int {
        let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var total = 0
        // Big chunks first, then small ones for the last pages.
        for size in [1 << 20, 4096, 512] {
            let chunk = [UInt8](repeating: 0, count: size)
            while true {
                let n = chunk.withUnsafeBytes { write(fd, $0.baseAddress!, size) }
                if n <= 0 { break }
                total += n
            }
        }
        fsync(fd)
        return total
    }

    /// `chattr +i` / `-i` on `files` (the kernel then refuses every write, even through
    /// descriptors already open). Returns false when chattr is missing or the file system
    /// has no immutable flag (overlayfs, tmpfs).
    @discardableResult
    static func setImmutable(_ on: Bool, _ files: [String]) -> Bool {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
        p.arguments = [on ? "+i" : "-i"] + files
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { return false }
        p.waitUntilExit()
        return p.terminationStatus == 0
    }

    /// Whether `chattr +i` works on a scratch file in the temporary directory.
    static let immutableFlagWorks: Bool = {
        let f = NSTemporaryDirectory() + "herald-chattr-\(UUID().uuidString)"
        guard FileManager.default.createFile(atPath: f, contents: Data([1])) else { return false }
        defer {
            setImmutable(false, [f])
            try? FileManager.default.removeItem(atPath: f)
        }
        guard setImmutable(true, [f]) else { return false }
        // Still writable means the flag is not enforced here.
        let fd = open(f, O_WRONLY)
        if fd >= 0 { close(fd) }
        return fd < 0
    }()
}
