import HeraldAPNS
import HeraldNet
import Testing

@testable import HeraldSender

/// `APNSRequestStock`: a reused request is indistinguishable from a new one, the stock is
/// bounded, and a request waits in it at most once.
@Suite struct APNSRequestStockTests {
    final class NoSink: APNSResultSink {
        func apnsCompleted(_ request: APNSRequest, result: APNSResult) {}
    }

    let token: [UInt8] = Array(0..<32)
    var hex: String { "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f" }

    func template() -> APNSTemplate { APNSTemplate(headers: HeaderList(), body: nil, sink: NoSink()) }

    @Test func theTokenPathIsWrittenAsAPNsWantsIt() {
        var path: [UInt8] = Array("left over from a longer path".utf8)
        APNSRequests.writeTokenPath([0xab, 0x01, 0xff], into: &path)
        #expect(String(decoding: path, as: UTF8.self) == "/3/device/ab01ff")
        let r = APNSRequest(token: token, template: template())
        #expect(r.path == APNSRequests.tokenPath(hex))
        #expect(r.pathBytes == Array(APNSRequests.tokenPath(hex).utf8))
    }

    @Test func aReusedRequestStartsAfresh() {
        var stock = APNSRequestStock(limit: 4)
        let t1 = template()
        let first = stock.take(token: [1], template: t1, index: 7)
        #expect(stock.count == 0)
        first.attempts = 3
        first.refusals = 2
        first.tokenRefreshed = true
        first.sentAt = 99
        first.sentAtMillis = 1234
        first.lastRetryable = .retry(reason: .connectionLost, status: 0, after: nil)
        first.express = true
        stock.put(first)
        #expect(stock.count == 1)
        #expect(first.context == nil)
        let t2 = template()
        let again = stock.take(token: token, template: t2, context: t2, index: 42)
        #expect(again === first)
        #expect(stock.count == 0)
        #expect(again.path == "/3/device/" + hex)
        #expect(again.template === t2)
        #expect(again.context === t2)
        #expect(again.index == 42)
        #expect(again.attempts == 0 && again.refusals == 0 && !again.tokenRefreshed)
        #expect(again.sentAt == 0 && again.sentAtMillis == 0 && again.lastRetryable == nil && !again.express)
        #expect(again.headers.count == 0)
        #expect(!again.stocked)
    }

    @Test func aBroadcastRequestReusedForATokenLosesItsFields() {
        var stock = APNSRequestStock()
        var fields = HeaderList()
        fields.append("apns-channel-id", "abc")
        let b = APNSRequest(path: APNSRequests.broadcastPath(bundleID: "com.example"), headers: fields, template: template())
        stock.put(b)
        let r = stock.take(token: [0xff], template: template())
        #expect(r === b)
        #expect(r.headers.count == 0)
        #expect(r.path == "/3/device/ff")
    }

    @Test func theStockIsBoundedAndTakesARequestOnce() {
        var stock = APNSRequestStock(limit: 2)
        let t = template()
        let rs = (0..<3).map { _ in APNSRequest(token: token, template: t) }
        for r in rs { stock.put(r) }
        #expect(stock.count == 2)
        stock.put(rs[0])
        #expect(stock.count == 2, "a request already in the stock is not kept twice")
        #expect(!rs[2].stocked)
    }
}
