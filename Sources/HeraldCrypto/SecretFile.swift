#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Small secret files (the generated admin token, keys): written private from the first
/// byte and replaced atomically; errors name the path, never the contents.
public enum SecretFile {
    /// Largest file `read` accepts; secrets are small, and the cap keeps a mistaken path
    /// (a device, a log) from being read whole into memory.
    public static let maximumSize = 1 << 20

    /// Writes `contents` to `path` with mode 0600. The bytes go to `path + ".tmp"`, created
    /// with mode 0600 (`O_NOFOLLOW`, so a planted symlink is not followed; `fchmod` in case
    /// it already existed with a wider mode), are fsynced, then renamed over `path`, so a
    /// reader sees the old file or the new one and never a wider mode. Blocking I/O: call
    /// from a thread that may block, not the cooperative pool.
    /// - Throws: `CryptoError` `.io(errno:)` naming the path.
    public static func write(_ contents: String, to path: String) throws(CryptoError) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_CREAT | O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ioError("cannot create", temporary) }
        var failure: CryptoError? = nil
        if fchmod(fd, 0o600) != 0 {
            failure = ioError("cannot set mode 0600 on", temporary)
        } else if !writeAll(fd, Array(contents.utf8)) {
            failure = ioError("cannot write", temporary)
        } else if fsync(fd) != 0 {
            failure = ioError("cannot flush", temporary)
        }
        if close(fd) != 0 && failure == nil { failure = ioError("cannot close", temporary) }
        if failure == nil && rename(temporary, path) != 0 {
            failure = ioError("cannot rename \(temporary) to", path)
        }
        if let failure {
            unlink(temporary)
            throw failure
        }
        syncDirectory(of: path)
    }

    /// Reads the whole file at `path` as UTF-8 text. Blocking I/O: call from a thread that
    /// may block, not the cooperative pool.
    /// - Throws: `CryptoError` `.io(errno:)` naming the path (`EFBIG` when it is larger
    ///   than `maximumSize`).
    public static func read(_ path: String) throws(CryptoError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ioError("cannot open", path) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ioError("cannot read", path)
            }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
            guard bytes.count <= maximumSize else {
                throw CryptoError(.io(errno: EFBIG), "\(path) is larger than \(maximumSize) bytes")
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += n
            }
            return true
        }
    }

    /// Makes the rename durable; best effort (some file systems refuse fsync on a directory).
    private static func syncDirectory(of path: String) {
        let directory: String
        if let slash = path.lastIndex(of: "/") {
            directory = slash == path.startIndex ? "/" : String(path[..<slash])
        } else {
            directory = "."
        }
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    private static func ioError(_ what: String, _ path: String) -> CryptoError {
        let code = errno
        return CryptoError(.io(errno: code), "\(what) \(path): \(String(cString: strerror(code)))")
    }
}
