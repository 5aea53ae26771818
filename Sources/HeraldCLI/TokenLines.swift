import Foundation

/// Reads a token file as a stream: one token per line, blank lines and lines starting with
/// `#` skipped, surrounding spaces and `\r` trimmed. `-` is standard input. Memory stays
/// bounded by one read chunk whatever the file's size.
final class TokenLines {
    let name: String
    /// The file's size when it is a regular file (for a percentage), else nil.
    let size: Int64?
    /// Bytes of the lines returned so far (for a percentage of `size`).
    private(set) var position: Int64 = 0
    private(set) var lineNumber = 0
    private let handle: FileHandle
    private let ownsHandle: Bool
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false

    /// Opens `path`. Throws `CommandFailure` when it cannot be read.
    init(path: String) throws {
        if path == "-" {
            name = "standard input"
            handle = FileHandle.standardInput
            ownsHandle = false
            size = nil
            return
        }
        guard let h = FileHandle(forReadingAtPath: path) else {
            throw CommandFailure(
                "cannot read \(path): " + (FileManager.default.fileExists(atPath: path) ? "permission denied" : "no such file"))
        }
        name = path
        handle = h
        ownsHandle = true
        let attrs = try? FileManager.default.attributesOfItem(atPath: path)
        size = (attrs?[.type] as? FileAttributeType) == .typeRegular ? (attrs?[.size] as? NSNumber)?.int64Value : nil
    }

    deinit { if ownsHandle { try? handle.close() } }

    /// The next token and its line number (1-based), nil at the end. Throws
    /// `CommandFailure` on a read error.
    func next() throws -> (line: Int, token: String)? {
        while true {
            if let nl = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[start..<nl]
                position += Int64(nl + 1 - start)
                start = nl + 1
                lineNumber += 1
                if let token = Self.token(line) { return (lineNumber, token) }
                continue
            }
            if atEnd {
                guard start < buffer.count else { return nil }
                let line = buffer[start...]
                position += Int64(buffer.count - start)
                start = buffer.count
                lineNumber += 1
                if let token = Self.token(line) { return (lineNumber, token) }
                return nil
            }
            try fill()
        }
    }

    private func fill() throws {
        buffer.removeSubrange(0..<start)
        start = 0
        let chunk: Data?
        do {
            chunk = try handle.read(upToCount: 1 << 16)
        } catch {
            throw CommandFailure("cannot read \(name): \(error.localizedDescription)")
        }
        guard let chunk, !chunk.isEmpty else {
            atEnd = true
            return
        }
        buffer.append(contentsOf: chunk)
    }

    /// The trimmed line, nil when blank or a comment.
    static func token(_ line: ArraySlice<UInt8>) -> String? {
        let isSpace: (UInt8) -> Bool = { $0 == 32 || $0 == 9 || $0 == 13 }
        guard let first = line.firstIndex(where: { !isSpace($0) }), let last = line.lastIndex(where: { !isSpace($0) }) else {
            return nil
        }
        if line[first] == UInt8(ascii: "#") { return nil }
        return String(decoding: line[first...last], as: UTF8.self)
    }
}
