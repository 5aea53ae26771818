/// The tokens of one scan batch, their bytes end to end in one buffer. A batch was an array
/// of arrays: one allocation per token when it was read and one release and free when the
/// batch was done (callgrind of `Benchmarks/faninstr.sh`: ~470 and ~300 instructions per push,
/// issue #12). Here a batch of any size is two allocations.
///
/// A collection of tokens (`[UInt8]`): reading an element copies it out, which the rare
/// paths (a prune, a checkpoint's last token, tests) do; the fan-out's path lends the bytes
/// in place (`withToken`).
public struct TokenRows: Sendable, Equatable, RandomAccessCollection, ExpressibleByArrayLiteral, CustomStringConvertible {
    /// Every token's bytes, in order.
    private var bytes: [UInt8] = []
    /// Where each token ends in `bytes` (it starts where the one before ends).
    private var ends: [Int] = []

    public init() {}

    /// Room for `count` tokens of `length` bytes without growing.
    public init(capacity count: Int, length: Int = 32) {
        bytes.reserveCapacity(count * length)
        ends.reserveCapacity(count)
    }

    public init<S: Sequence>(_ tokens: S) where S.Element == [UInt8] {
        for t in tokens { append(t) }
    }

    public init(arrayLiteral tokens: [UInt8]...) { self.init(tokens) }

    public var startIndex: Int { 0 }
    public var endIndex: Int { ends.count }

    /// Token `i`, copied.
    public subscript(i: Int) -> [UInt8] {
        Array(bytes[start(i)..<ends[i]])
    }

    /// Lends token `i`'s bytes; valid only inside `body`.
    @inline(__always)
    public func withToken<R>(_ i: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        let s = start(i)
        return try bytes.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[s..<ends[i]])) }
    }

    public mutating func append(_ token: [UInt8]) {
        bytes.append(contentsOf: token)
        ends.append(bytes.count)
    }

    /// Through a typed buffer: a raw buffer was appended a byte at a time (~250
    /// instructions for a 32-byte token), a typed one is one copy.
    public mutating func append(_ token: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: token.assumingMemoryBound(to: UInt8.self))
        ends.append(bytes.count)
    }

    public var description: String { Array(self).description }

    @inline(__always)
    private func start(_ i: Int) -> Int { i == 0 ? 0 : ends[i - 1] }
}
