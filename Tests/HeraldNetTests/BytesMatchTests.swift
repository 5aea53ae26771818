import Glibc
import Testing

@testable import HeraldNet

@Suite struct BytesMatchTests {
    /// Every length to 40 (the one- and two-word paths and memcmp's), equal and with one byte
    /// changed at each place, against memcmp.
    @Test func agreesWithMemcmpAtEveryLengthAndPlace() {
        for n in 0...40 {
            let a = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            a.withUnsafeBufferPointer { pa in
                #expect(bytesMatch(pa.baseAddress ?? UnsafePointer(bitPattern: 1)!, pa.baseAddress ?? UnsafePointer(bitPattern: 1)!, n))
            }
            for at in 0..<n {
                for delta: UInt8 in [1, 0x80] {
                    var b = a
                    b[at] ^= delta
                    a.withUnsafeBufferPointer { pa in
                        b.withUnsafeBufferPointer { pb in
                            let want = memcmp(pa.baseAddress!, pb.baseAddress!, n) == 0
                            #expect(bytesMatch(pa.baseAddress!, pb.baseAddress!, n) == want, "length \(n), byte \(at)")
                            #expect(!want)
                        }
                    }
                }
            }
        }
    }

    /// Every length to 40 into a larger buffer: exactly those bytes, nothing around them.
    @Test func copiesExactlyTheBytesAtEveryLength() {
        for n in 0...40 {
            let src = (0..<n).map { UInt8(truncatingIfNeeded: $0 &+ 1) }
            var dst = [UInt8](repeating: 0xEE, count: n + 16)
            src.withUnsafeBufferPointer { s in
                dst.withUnsafeMutableBufferPointer { d in bytesCopy(d.baseAddress! + 8, s.baseAddress ?? UnsafePointer(bitPattern: 1)!, n) }
            }
            #expect(Array(dst[8..<(8 + n)]) == src, "length \(n)")
            #expect(dst[0..<8].allSatisfy { $0 == 0xEE } && dst[(8 + n)...].allSatisfy { $0 == 0xEE }, "length \(n)")
        }
    }
}
