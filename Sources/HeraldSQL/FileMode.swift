#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Owner-only files: the database holds device tokens and signing-key references.
enum FileMode {
    static let ownerOnly: mode_t = 0o600

    /// Creates an empty file with mode 0600 unless something exists at `path`. SQLite then
    /// opens it as an empty database and gives its -wal and -shm files the same mode.
    /// Failures are left for SQLite's open to report (it gives the better error).
    static func createOwnerOnlyFileIfMissing(_ path: String) {
        // Not a file name to SQLite: an in-memory database, or a URI (this build has
        // SQLITE_USE_URI).
        if path.isEmpty || path == ":memory:" || path.hasPrefix("file:") { return }
        let fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, ownerOnly)
        if fd >= 0 { close(fd) }
    }

    /// Creates (or truncates) `path` with mode 0600, even when it existed with another.
    static func createOwnerOnlyFile(_ path: String) throws(DatabaseError) {
        let fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, ownerOnly)
        guard fd >= 0 else { throw .fileSystem(operation: "open", path: path, errno: errno) }
        defer { close(fd) }
        guard fchmod(fd, ownerOnly) == 0 else { throw .fileSystem(operation: "chmod", path: path, errno: errno) }
    }

    /// Renames `from` over `to`, then fsyncs the directory so the rename survives a crash.
    static func replace(_ to: String, with from: String) throws(DatabaseError) {
        guard rename(from, to) == 0 else { throw .fileSystem(operation: "rename", path: to, errno: errno) }
        let dir = to.lastIndex(of: "/").map { String(to[..<$0]) } ?? "."
        let fd = open(dir.isEmpty ? "/" : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }  // the rename is done; only its durability is unconfirmed
        fsync(fd)
        close(fd)
    }

    static func remove(_ path: String) { unlink(path) }
}
