import Testing

@testable import HeraldNet
@testable import HeraldSimulator

@Suite struct SimFieldsTests {
    func request(_ fields: [(String, String)]) -> HTTP2ServerRequest {
        var r = HTTP2ServerRequest(streamID: 1)
        for (n, v) in [(":method", "POST"), (":path", "/3/device/00")] + fields {
            Array(n.utf8).withUnsafeBufferPointer { name in
                Array(v.utf8).withUnsafeBufferPointer { value in r.add(name: name, value: value) }
            }
        }
        return r
    }

    /// DuplicateHeaders (reference §3.1): a known field twice, or a field of another name
    /// twice, however many other names come with it; distinct names are not duplicates.
    @Test func aFieldSentTwiceIsADuplicateWhateverItsName() {
        let cases: [([(String, String)], Bool)] = [
            ([("apns-topic", "a"), ("authorization", "b")], false),
            ([("apns-topic", "a"), ("apns-topic", "a")], true),
            ([("user-agent", "x"), ("content-length", "9")], false),
            ([("user-agent", "x"), ("x-a", "1"), ("content-length", "9"), ("x-a", "2")], true),
            ([("x-a", "1"), ("x-b", "1"), ("x-c", "1"), ("x-d", "1")], false),
            ([("x-a", "1"), ("x-b", "1"), ("x-c", "1"), ("x-d", "1"), ("x-d", "2")], true),
            ([("x-a", "1"), ("x-b", "1"), ("x-c", "1"), ("x-d", "1"), ("x-e", "1"), ("x-a", "2")], true),
            ([("x-a", "1"), ("x-b", "1"), ("x-c", "1"), ("x-d", "1"), ("x-e", "1"), ("x-f", "2")], false),
        ]
        for (fields, duplicate) in cases {
            #expect(SimFields(request(fields)).duplicate == duplicate, "\(fields)")
        }
    }

    @Test func findsTheFieldsItChecks() {
        let f = SimFields(request([("user-agent", "x"), ("apns-topic", "t"), ("apns-priority", "5"), ("authorization", "b")]))
        #expect(f.topic == 3 && f.priority == 4 && f.authorization == 5 && f.id == -1)
    }

    /// The id an answer echoes: `apns-id` when sent and a lower-case UUID; an invalid
    /// `apns-id` is echoed by neither field (the token route answers BadMessageId); else
    /// `apns-request-id` when it is one.
    @Test func echoesTheIDOnlyWhenItIsALowerCaseUUID() {
        let uuid = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
        let cases: [([(String, String)], Int)] = [
            ([("apns-topic", "t"), ("apns-id", uuid)], 3),
            ([("apns-id", uuid.uppercased()), ("apns-request-id", uuid)], -1),
            ([("apns-id", "x"), ("apns-request-id", uuid)], -1),
            ([("apns-request-id", uuid)], 2),
            ([("apns-request-id", String(uuid.dropLast()))], -1),
            ([("apns-topic", "t")], -1),
        ]
        for (fields, echo) in cases {
            #expect(SimFields(request(fields)).echo == echo, "\(fields)")
        }
    }
}
