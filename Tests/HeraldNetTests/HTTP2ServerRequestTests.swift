import Foundation
import Testing

@testable import HeraldNet

/// The server request's raw field storage (`HTTP2ServerRequest.Storage`) and the in-place
/// writers of the simulator's answers (`HTTP2UUIDField.write`, `HeaderList.setUUID`): pure
/// values, no session.
@Suite struct HTTP2ServerRequestTests {
    func request(_ fields: [(String, String)]) -> HTTP2ServerRequest {
        var r = HTTP2ServerRequest(streamID: 1)
        for (n, v) in fields {
            Array(n.utf8).withUnsafeBufferPointer { name in
                Array(v.utf8).withUnsafeBufferPointer { value in r.add(name: name, value: value) }
            }
        }
        return r
    }

    @Test func keepsEveryFieldInArrivalOrderAndReadsThemInPlace() {
        let r = request([
            (":method", "POST"), (":path", "/3/device/ab"), ("apns-topic", "t"), (":scheme", "https"), ("empty", ""),
            (":unknown", "dropped"), ("apns-topic", "u"),
        ])
        #expect(r.method == "POST" && r.path == "/3/device/ab" && r.scheme == "https" && r.authority == "")
        #expect(r.headers.map { "\($0.name)=\($0.value)" } == ["apns-topic=t", "empty=", "apns-topic=u"])
        #expect(r.header("apns-topic") == "t" && r.header("empty") == "" && r.header("none") == nil)
        #expect(r.value("apns-topic") == ArraySlice(Array("t".utf8)) && r.count(of: "apns-topic") == 2)
        #expect(r.hasDuplicateFields && r.regularCount == 3 && r.fields.count == 6)
        #expect(r.pathBytes == ArraySlice(Array("/3/device/ab".utf8)) && r.methodBytes == ArraySlice(Array("POST".utf8)))
        let view = r.withFieldBytes { b in
            var names: [String] = []
            b.forEachRegularName { i, n in names.append("\(i):\(String(decoding: n, as: UTF8.self))") }
            return (
                count: b.count, path: b.path.bytesEqual("/3/device/ab"), method: b.method.bytesEqual("POST"),
                pseudo: (0..<b.count).map { b.isPseudo($0) }, topic: b.name(at: 2).bytesEqual("apns-topic"),
                emptyValue: b.value(at: 4).isEmpty, same: b.sameName(2, 5), different: !b.sameName(2, 4), names: names
            )
        }
        #expect(view.count == 6 && view.path && view.method && view.pseudo == [true, true, false, true, false, false])
        #expect(view.topic && view.emptyValue && view.same && view.different)
        #expect(view.names == ["2:apns-topic", "4:empty", "5:apns-topic"])
        // `fields` is a copy with the same entries.
        #expect(r.fields[2].name == "apns-topic" && r.fields[5].value == "u")
    }

    @Test func growsPastItsFirstBufferAndStopsAt64RegularFields() {
        let long = String(repeating: "x", count: 700)
        var fields = [(":path", "/" + long)]
        for i in 0..<70 { fields.append(("x-\(i)", "\(i)")) }
        let r = request(fields)
        #expect(r.path == "/" + long)
        #expect(r.regularCount == 64 && r.headers.count == 64 && r.headers.last?.name == "x-63")
    }

    @Test func copiesOnWriteAndResetsWithoutLosingAnotherHoldersFields() {
        var r = request([(":path", "/a"), ("k", "v")])
        let kept = r
        r.body = [1, 2]
        #expect(kept.body.isEmpty && r.body == [1, 2] && r.header("k") == "v")
        r.reset(streamID: 3)
        #expect(r.streamID == 3 && r.fields.count == 0 && r.path == "" && r.bodySize == 0)
        #expect(kept.path == "/a" && kept.header("k") == "v")
        Array("abc".utf8).withUnsafeBufferPointer { r.appendBody($0, limit: 2) }
        #expect(r.body == Array("ab".utf8) && r.bodySize == 3)
    }

    /// The word-at-a-time writer gives what a digit-by-digit one gives, version 4, variant 10.
    @Test func uuidTextMatchesADigitByDigitWriter() {
        func reference(_ high: UInt64, _ low: UInt64) -> String {
            let a = (high & 0xffff_ffff_ffff_0fff) | 0x4000
            let b = (low & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000
            let hex = String(format: "%016llx%016llx", a, b)
            let c = Array(hex)
            return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-" + String(c[16..<20]) + "-"
                + String(c[20..<32])
        }
        var g = SystemRandomNumberGenerator()
        let edges: [(UInt64, UInt64)] = [
            (0, 0), (.max, .max), (0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210), (0xa0a0_a0a0_a0a0_a0a0, 0x0909_0909_0909_0909),
        ]
        for (h, l) in edges + (0..<2000).map({ _ in (g.next(), g.next()) }) {
            let text = HTTP2UUIDField(name: "apns-id", high: h, low: l).text
            #expect(text == reference(h, l))
        }
    }

    @Test func prebuiltIdFieldsAreRewrittenInPlace() {
        var l = HeaderList.idFields("apns-id", "apns-unique-id")
        l.setUUID(at: 1, high: 0x0123_4567_89ab_cdef, low: 0xfedc_ba98_7654_3210)
        let id = Array("00000000-1111-4222-8333-444444444444".utf8)
        id.withUnsafeBufferPointer { l.setValue(at: 0, bytes: $0) }
        #expect(l.count == 2 && l[0].name == "apns-id" && l[0].value == "00000000-1111-4222-8333-444444444444")
        #expect(l[1].name == "apns-unique-id" && l[1].value == "01234567-89ab-4def-bedc-ba9876543210")
        #expect(l.entries.allSatisfy { $0.noIndex })
    }
}
