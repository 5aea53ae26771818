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

    @Test func hexAppendWritesAfterWhatTheBufferHolds() {
        let every = (0...255).map { UInt8($0) }
        var out = Array("/3/device/".utf8)
        Hex.append(every, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "/3/device/" + Hex.encode(every))
        // A reused buffer: emptied, then written again (shorter, then empty input).
        out.removeAll(keepingCapacity: true)
        Hex.append([0x0a, 0xf0], to: &out)
        #expect(out == Array("0af0".utf8))
        Hex.append([], to: &out)
        #expect(out == Array("0af0".utf8))
        var empty: [UInt8] = []
        Hex.append([], to: &empty)
        #expect(empty.isEmpty)
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
