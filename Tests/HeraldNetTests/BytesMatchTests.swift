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
}
