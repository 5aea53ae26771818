import CNghttp2
import Glibc

/// nghttp2's memory for one session, client or server, from free lists by size class
/// (issue #12). A request costs a client's nghttp2 eight allocations and nine frees (its
/// stream, its queued HEADERS item, the copy of its fields, the answer's header buffers),
/// and a server's about as many (the stream, the header block's literals, the answer);
/// glibc's `malloc`/`free` spent ~2,000 instructions per push on them, a free list a few dozen.
///
/// Confined to the session's thread, as the session is (nghttp2 calls it only from inside
/// the session's own calls). Each block starts with a 16-byte header holding its class
/// and capacity (so `free` and `realloc` need no size, and the payload keeps malloc's
/// 16-byte alignment); a freed block keeps its class and holds the next free block where
/// its capacity was. Blocks above the largest class come from `malloc` and go back to
/// `free` at once; a class keeps at most `limit` freed blocks (what one connection's
/// streams have in flight), the rest go back to `free`. Everything kept is freed with the
/// allocator, after the session (`nghttp2_session_del` returns every block first).
///
/// `HERALD_NGHTTP2_MALLOC=1` in the environment turns it off (nghttp2 then uses `malloc`):
/// `scripts/sanitizers` sets it, since AddressSanitizer cannot see a use after free of a
/// block this allocator keeps.
final class HTTP2Allocator {
    /// False when `HERALD_NGHTTP2_MALLOC` is set (read once per process).
    static let enabled = getenv("HERALD_NGHTTP2_MALLOC") == nil

    /// Payload sizes of the classes: 32, 64, … 4096 bytes.
    static let classes = 8
    static let smallest = 32
    static let header = 16
    /// Freed blocks kept per class. 8,192: with 1,000 streams in flight a server session
    /// holds more than 2,048 blocks of one class at once, and at a bound of 2,048 one
    /// allocation in five (22,608 of 120,066 in `Benchmarks/siminstr.sh`) went to `malloc`
    /// and back to `free` (273 instructions per request). What is kept is at most what was
    /// in use at once, freed with the session.
    let limit: Int
    private let heads = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: classes)
    private let counts = UnsafeMutablePointer<Int>.allocate(capacity: classes)

    init(limit: Int = 8192) {
        self.limit = limit
        heads.initialize(repeating: nil, count: Self.classes)
        counts.initialize(repeating: 0, count: Self.classes)
    }

    deinit {
        for c in 0..<Self.classes {
            var p = heads[c]
            while let block = p {
                p = block.load(fromByteOffset: 8, as: UnsafeMutableRawPointer?.self)
                Glibc.free(block)
            }
        }
        heads.deallocate()
        counts.deallocate()
    }

    /// Freed blocks kept now, in all classes (tests).
    var kept: Int { (0..<Self.classes).reduce(0) { $0 + counts[$1] } }

    /// The class of a payload of `size` bytes, or `classes` when it is above the largest.
    @inline(__always)
    static func sizeClass(_ size: Int) -> Int {
        guard size > smallest else { return 0 }
        let c = (Int.bitWidth - (size - 1).leadingZeroBitCount) - 5
        return min(c, classes)
    }

    @inline(__always)
    static func capacity(ofClass c: Int) -> Int { smallest << c }

    func allocate(_ size: Int) -> UnsafeMutableRawPointer? {
        let c = Self.sizeClass(size)
        if c < Self.classes, let block = heads[c] {
            heads[c] = block.load(fromByteOffset: 8, as: UnsafeMutableRawPointer?.self)
            block.storeBytes(of: Self.capacity(ofClass: c), toByteOffset: 8, as: Int.self)
            counts[c] -= 1
            return block + Self.header
        }
        let capacity = c < Self.classes ? Self.capacity(ofClass: c) : size
        guard let block = Glibc.malloc(Self.header + capacity) else { return nil }
        block.storeBytes(of: c, as: Int.self)
        block.storeBytes(of: capacity, toByteOffset: 8, as: Int.self)
        return block + Self.header
    }

    func free(_ payload: UnsafeMutableRawPointer?) {
        guard let payload else { return }
        let block = payload - Self.header
        let c = block.load(as: Int.self)
        guard c < Self.classes, counts[c] < limit else {
            Glibc.free(block)
            return
        }
        block.storeBytes(of: heads[c], toByteOffset: 8, as: UnsafeMutableRawPointer?.self)
        heads[c] = block
        counts[c] += 1
    }

    func reallocate(_ payload: UnsafeMutableRawPointer?, _ size: Int) -> UnsafeMutableRawPointer? {
        guard let payload else { return allocate(size) }
        let capacity = (payload - Self.header).load(fromByteOffset: 8, as: Int.self)
        if size <= capacity { return payload }
        guard let bigger = allocate(size) else { return nil }
        bigger.copyMemory(from: payload, byteCount: capacity)
        free(payload)
        return bigger
    }

    /// The `nghttp2_mem` that routes nghttp2's allocations here (unretained: the session
    /// that uses it keeps the allocator alive).
    var mem: nghttp2_mem {
        nghttp2_mem(
            mem_user_data: Unmanaged.passUnretained(self).toOpaque(),
            malloc: { size, ud in HTTP2Allocator.with(ud) { $0.allocate(size) } },
            free: { p, ud in HTTP2Allocator.with(ud) { $0.free(p) } },
            calloc: { n, size, ud in
                let total = n.multipliedReportingOverflow(by: size)
                guard !total.overflow, let p = HTTP2Allocator.with(ud, { $0.allocate(total.partialValue) }) else { return nil }
                p.initializeMemory(as: UInt8.self, repeating: 0, count: total.partialValue)
                return p
            },
            realloc: { p, size, ud in HTTP2Allocator.with(ud) { $0.reallocate(p, size) } })
    }

    /// The allocator of `ud`, borrowed (no retain and release per allocation).
    @inline(__always)
    private static func with<R>(_ ud: UnsafeMutableRawPointer?, _ body: (HTTP2Allocator) -> R) -> R {
        Unmanaged<HTTP2Allocator>.fromOpaque(ud!)._withUnsafeGuaranteedRef(body)
    }
}
