import Foundation
import Testing

@testable import HeraldCore

@Suite struct CoreTests {
    @Test func hexRoundTripsAndRejectsGarbage() {
        let bytes: [UInt8] = [0x00, 0x7f, 0xab, 0xff]
        #expect(Hex.encode(bytes) == "007fabff")
        #expect(Hex.decode("007FABff") == bytes)
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
    }

    @Test func hexAppendsAfterWhatTheBufferHolds() {
        var out = Array("/3/device/".utf8)
        Hex.append([0x00, 0x7f, 0xab, 0xff], to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "/3/device/007fabff")
        Hex.append([], to: &out)
        #expect(out.count == 18)
        var all: [UInt8] = []
        Hex.append((0...255).map { UInt8($0) }, to: &all)
        #expect(String(decoding: all, as: UTF8.self) == Hex.encode((0...255).map { UInt8($0) }))
    }

    @Test func hexAppendsEveryLengthAsTheEncoderSpellsIt() {
        // Four bytes per word step, the rest one by one: every remainder, every digit.
        let bytes: [UInt8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xf0, 0x0f, 0x9a, 0xa9, 0x5c]
        for n in 0...bytes.count {
            var out: [UInt8] = []
            Hex.append(Array(bytes.prefix(n)), to: &out)
            #expect(String(decoding: out, as: UTF8.self) == Hex.encode(Array(bytes.prefix(n))))
        }
    }

    @Test func base64URLMatchesRFC4648Vectors() {
        // RFC 4648 §10 vectors, translated to the url alphabet without padding.
        let vectors = ["": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy"]
        for (plain, coded) in vectors {
            #expect(Base64URL.encode(Array(plain.utf8)) == coded)
            #expect(Base64URL.decode(coded) == Array(plain.utf8))
        }
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8")
        #expect(Base64URL.decode("Zg==") == nil)
    }

    @Test func uuidsAreLowerCaseCanonical() {
        for _ in 0..<100 {
            let u = Identifiers.lowercaseUUID()
            #expect(Identifiers.isLowercaseUUID(u))
            #expect(UUID(uuidString: u) != nil)
        }
        #expect(!Identifiers.isLowercaseUUID("6E1F5B07-7A6C-4B5D-9A43-2B3F0A1C9D8E"))
    }

    /// The word-at-a-time check agrees with the byte loop: every byte value at every one of
    /// the 36 places of a valid UUID, every length around 36, and random strings of UUID
    /// characters (each byte only a little off: '/', ':', '`', 'g', 'A'-'F', 0x80 | c).
    @Test func theWordCheckAgreesWithTheByteLoop() {
        let valid = Array("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d".utf8)
        func check(_ b: [UInt8]) {
            let fast = b.withUnsafeBufferPointer { Identifiers.isLowercaseUUID(bytes: $0) }
            #expect(fast == Identifiers.isLowercaseUUIDPerByte(b), "\(b)")
        }
        check(valid)
        #expect(valid.withUnsafeBufferPointer { Identifiers.isLowercaseUUID(bytes: $0) })
        var refused = 0
        for i in 0..<36 {
            for v in 0...255 {
                var b = valid
                b[i] = UInt8(v)
                check(b)
                if !b.withUnsafeBufferPointer({ Identifiers.isLowercaseUUID(bytes: $0) }) { refused += 1 }
            }
        }
        // 32 digit places × (256 − 16) + 4 dash places × 255.
        #expect(refused == 32 * 240 + 4 * 255)
        for n in 0..<40 { check(Array(valid.prefix(n)) + Array(repeating: UInt8(ascii: "a"), count: max(0, n - 36))) }
        let near = Array("0123456789abcdef/:`gABCDEF-".utf8) + [0xB0, 0xE1, 0x00, 0x7F]
        var rng = FastRandom(seed: 7)
        for _ in 0..<20_000 {
            var b = valid
            for _ in 0..<Int(rng.next() % 3) { b[Int(rng.next() % 36)] = near[Int(rng.next() % UInt64(near.count))] }
            check(b)
        }
    }

    @Test func jsonKeepsIntegersApartFromDoubles() throws {
        let v = try JSON.parse(#"{"t":1767225600,"s":50.5,"b":true,"n":null}"#)
        #expect(v["t"] == .int(1_767_225_600))
        #expect(v["s"] == .double(50.5))
        #expect(v["b"] == .bool(true))
        #expect(v.text == #"{"b":true,"n":null,"s":50.5,"t":1767225600}"#)
        #expect(throws: JSONParseError.self) { try JSON.parse("{\"a\":") }
    }

    @Test func metricsRenderInPrometheusTextFormat() {
        let m = MetricsRegistry()
        m.counter("herald_test_events_total", help: "Events.", labels: ["result": "ok"]).inc(3)
        m.histogram("herald_test_latency_seconds", help: "Latency.", buckets: [0.1, 1]).observe(0.5)
        let text = m.render()
        #expect(text.contains("# TYPE herald_test_events_total counter\nherald_test_events_total{result=\"ok\"} 3\n"))
        #expect(text.contains("herald_test_latency_seconds_bucket{le=\"0.1\"} 0\n"))
        #expect(text.contains("herald_test_latency_seconds_bucket{le=\"1\"} 1\n"))
        #expect(text.contains("herald_test_latency_seconds_count 1\n"))
    }
}

@Suite struct ThreadNameTests {
    @Test func aThreadNamedFromInsideShowsUnderThatNameToTheKernel() throws {
        let seen = Locked<[String]>([])
        let done = DispatchSemaphore(value: 0)
        let t = Thread {
            ThreadName.set("apns-token-sandbox")  // 18 bytes: Linux keeps 15
            let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
            seen.withLock { $0 = [ThreadName.current, comm.trimmingCharacters(in: .newlines)] }
            done.signal()
        }
        t.start()
        done.wait()
        #expect(seen.withLock { $0 } == ["apns-token-sand", "apns-token-sand"])
    }
}
