import Foundation
import HeraldCore
import HeraldStore
import Testing

/// Channels lost at APNs: the same bodies on SQLite and PostgreSQL.
@Suite struct ChannelLossContractTests {
    @Test(arguments: Backend.allCases) func aLossIsKeptOnceAndAppliesWhileTheChannelHoldsThatAPNSID(_ b: Backend) throws {
        let f = try Fixture(b)
        let m = try f.channel("m", mode: .broadcast)
        let other = try f.channel("o", mode: .hybrid)
        try f.channel("fan")
        #expect(try f.storage.apnsChannelLoss(channelID: "m") == nil)
        #expect(try f.storage.apnsChannelLosses().isEmpty)

        try f.storage.markAPNSChannelLost(channelNum: m.num, apnsChannelID: "Y2g=", atMillis: 1000)
        try f.storage.markAPNSChannelLost(channelNum: m.num, apnsChannelID: "Y2g=", atMillis: 2000)  // again: the first time stays
        let loss = APNSChannelLoss(channelNum: m.num, apnsChannelID: "Y2g=", lostAtMillis: 1000)
        #expect(try f.storage.apnsChannelLoss(channelID: "m") == loss)
        #expect(try f.storage.apnsChannelLoss(channelID: "o") == nil)
        #expect(try f.storage.apnsChannelLosses() == [loss])
        #expect(throws: StoreError.self) { try f.storage.markAPNSChannelLost(channelNum: 999_999, apnsChannelID: "x", atMillis: 1) }

        // A loss of an id the channel no longer holds does not apply.
        try f.storage.markAPNSChannelLost(channelNum: other.num, apnsChannelID: "b2xk", atMillis: 3000)
        #expect(try f.storage.apnsChannelLoss(channelID: "o") == nil)
        try f.storage.setAPNSChannelID(channelNum: other.num, "b2xk")
        #expect(try f.storage.apnsChannelLoss(channelID: "o")?.lostAtMillis == 3000)
        try f.storage.setAPNSChannelID(channelNum: other.num, "bmV3")
        #expect(try f.storage.apnsChannelLoss(channelID: "o") == nil)
        // Lost again with the new id: the loss moves to it.
        try f.storage.markAPNSChannelLost(channelNum: other.num, apnsChannelID: "bmV3", atMillis: 4000)
        #expect(
            try f.storage.apnsChannelLoss(channelID: "o")
                == APNSChannelLoss(channelNum: other.num, apnsChannelID: "bmV3", lostAtMillis: 4000))

        // A closed channel is no longer lost (publishing says closed).
        _ = try f.storage.closeChannel(id: "m")
        #expect(try f.storage.apnsChannelLoss(channelID: "m") == nil)
        #expect(try f.storage.apnsChannelLosses().map(\.channelNum) == [other.num])
    }
}
