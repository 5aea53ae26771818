import Testing

@testable import HeraldSimulator

@Suite struct SimHexTests {
    /// The eight-bytes-at-a-time check agrees with the per-byte definition for every byte
    /// value in every position, and for every length up to three words.
    @Test func agreesWithThePerByteDefinitionEverywhere() {
        func reference(_ b: [UInt8]) -> Bool {
            b.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) || ($0 >= 65 && $0 <= 70) }
        }
        let good = Array("0123456789abcdefABCDEF0123".utf8)
        var wrong: [String] = []
        for length in 0...24 {
            let base = Array(good.prefix(length))
            if !SimHex.isHex(base[...]) { wrong.append("all hex, length \(length)") }
            for position in 0..<length {
                for v in 0...255 {
                    var b = base
                    b[position] = UInt8(v)
                    if SimHex.isHex(b[...]) != reference(b) { wrong.append("byte \(v) at \(position) of \(length)") }
                }
            }
        }
        #expect(wrong.isEmpty, "\(wrong.prefix(10))")
    }

    @Test func readsASliceFromItsOwnStart() {
        let path = Array("/3/device/00ff".utf8)
        #expect(SimHex.isHex(path[10...]))
        #expect(!SimHex.isHex(path[9...]))
    }
}
