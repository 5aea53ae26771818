import Testing

@testable import HeraldNet

/// The client session's nghttp2 allocator: size classes, reuse of freed blocks up to its
/// bound, `realloc` keeping the bytes, `calloc` zeroed, blocks above the largest class
/// straight from malloc.
@Suite struct HTTP2AllocatorTests {
    @Test func sizesFallIntoPowerOfTwoClasses() {
        #expect(HTTP2Allocator.sizeClass(0) == 0)
        #expect(HTTP2Allocator.sizeClass(1) == 0)
        #expect(HTTP2Allocator.sizeClass(32) == 0)
        #expect(HTTP2Allocator.sizeClass(33) == 1)
        #expect(HTTP2Allocator.sizeClass(64) == 1)
        #expect(HTTP2Allocator.sizeClass(65) == 2)
        #expect(HTTP2Allocator.sizeClass(4096) == 7)
        #expect(HTTP2Allocator.sizeClass(4097) == HTTP2Allocator.classes)
        for size in [1, 31, 32, 33, 100, 500, 1000, 2049, 4096] {
            #expect(HTTP2Allocator.capacity(ofClass: HTTP2Allocator.sizeClass(size)) >= size)
        }
    }

    @Test func aFreedBlockIsHandedOutAgainForItsClassOnly() throws {
        let a = HTTP2Allocator(limit: 2)
        let p = try #require(a.allocate(100))
        a.free(p)
        #expect(a.kept == 1)
        let other = try #require(a.allocate(40))
        #expect(other != p, "another class")
        #expect(a.allocate(120) == p, "the same class (128) reuses it")
        #expect(a.kept == 0)
        // Bounded: a third freed block of a class goes back to malloc.
        let blocks = (0..<3).compactMap { _ in a.allocate(100) }
        for b in blocks { a.free(b) }
        #expect(a.kept == 2)
        a.free(p)
        a.free(other)
        a.free(nil)
        #expect(a.kept == 3)
    }

    @Test func reallocKeepsTheBytesAndCallocZeroes() throws {
        let a = HTTP2Allocator()
        let mem = a.mem
        let p = try #require(mem.malloc(20, mem.mem_user_data))
        for i in 0..<20 { p.storeBytes(of: UInt8(i), toByteOffset: i, as: UInt8.self) }
        #expect(mem.realloc(p, 30, mem.mem_user_data) == p, "still within its class")
        let q = try #require(mem.realloc(p, 5000, mem.mem_user_data))
        #expect((0..<20).allSatisfy { q.load(fromByteOffset: $0, as: UInt8.self) == UInt8($0) })
        let r = try #require(mem.realloc(q, 9000, mem.mem_user_data))
        #expect((0..<20).allSatisfy { r.load(fromByteOffset: $0, as: UInt8.self) == UInt8($0) })
        mem.free(r, mem.mem_user_data)
        let dirty = try #require(mem.malloc(64, mem.mem_user_data))
        dirty.initializeMemory(as: UInt8.self, repeating: 0xff, count: 64)
        mem.free(dirty, mem.mem_user_data)
        let z = try #require(mem.calloc(8, 8, mem.mem_user_data))
        #expect(z == dirty, "the freed 64-byte block, zeroed")
        #expect((0..<64).allSatisfy { z.load(fromByteOffset: $0, as: UInt8.self) == 0 })
        #expect(mem.calloc(Int.max, 2, mem.mem_user_data) == nil, "an overflowing size is refused")
        mem.free(z, mem.mem_user_data)
        #expect((UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(z))) % 16) == 0, "malloc's alignment kept")
    }
}
