import Foundation
import HeraldCore
import HeraldCrypto
import Testing

@testable import HeraldSender

/// Which team carries which bundle, and what a teams file may say: values, no I/O.
@Suite struct TeamRoutingTests {
    let two = APNSTeamRouting(
        teams: [
            .init(teamID: "TEAMAAAAAA", keyID: "KEYAAAAAAA", bundleIDs: ["com.a.app", "com.a.other"]),
            .init(teamID: "TEAMBBBBBB", keyID: "KEYBBBBBBB", bundleIDs: ["com.b.app"]),
        ], source: "/etc/herald/teams.json")

    @Test func aBundlePicksTheTeamThatListsIt() {
        #expect(two.team(for: "com.a.app") == .team("TEAMAAAAAA"))
        #expect(two.team(for: "com.a.other") == .team("TEAMAAAAAA"))
        #expect(two.team(for: "com.b.app") == .team("TEAMBBBBBB"))
    }

    @Test func aBundleNoTeamListsIsUncoveredAndTheMessageNamesTheFile() {
        #expect(two.team(for: "com.c.app") == .uncovered)
        #expect(two.team(for: "com.a.app.push-type.liveactivity") == .uncovered)
        #expect(two.team(for: "") == .uncovered)
        #expect(two.uncoveredMessage("com.c.app").contains("/etc/herald/teams.json"))
        #expect(two.uncoveredMessage("com.c.app").contains("com.c.app"))
    }

    @Test func theSingleKeyCoversEveryBundle() {
        let one = APNSTeamRouting.single(teamID: "TEAMAAAAAA", keyID: "KEYAAAAAAA")
        for b in ["com.a.app", "com.b.app", "x"] { #expect(one.team(for: b) == .team("TEAMAAAAAA")) }
        #expect(one.teamIDs == ["TEAMAAAAAA"])
        #expect(one.source == nil)
    }

    @Test func theTeamLabelSetIsTheFilesTeamsInOrder() {
        #expect(two.teamIDs == ["TEAMAAAAAA", "TEAMBBBBBB"])
    }

    // MARK: - the teams file

    func parse(_ text: String) throws(APNSTeamsFileError) -> [APNSTeamEntry] {
        try APNSTeamsFile.parse(Array(text.utf8), path: "/etc/herald/teams.json")
    }

    func refusal(_ text: String) -> APNSTeamsFileError? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return error
        }
    }

    @Test func aValidFileGivesEveryEntryInOrder() throws {
        let e = try parse(
            #"[{"team_id":"TEAMAAAAAA","key_id":"KEYAAAAAAA","key_file":"a.p8","bundle_ids":["com.a.app","com.a.app"]},"#
                + #"{"team_id":"TEAMBBBBBB","key_id":"KEYBBBBBBB","key_file":"/keys/b.p8","bundle_ids":["com.b.app"]}]"#)
        #expect(e.count == 2)
        #expect(e[0] == APNSTeamEntry(teamID: "TEAMAAAAAA", keyID: "KEYAAAAAAA", keyFile: "a.p8", bundleIDs: ["com.a.app"]))
        #expect(e[1].keyFile == "/keys/b.p8")
    }

    @Test func badJSONAndWrongShapesNameTheFile() {
        for text in ["", "{", #"{"team_id":"T"}"#, "[]", "[1]"] {
            let r = refusal(text)
            #expect(r?.path == "/etc/herald/teams.json", "\(text)")
            #expect(r?.description.hasPrefix("teams file /etc/herald/teams.json") == true)
        }
        #expect(refusal("[]")?.entry == nil)
        #expect(refusal("[1]")?.entry == 0)
    }

    @Test func aMissingOrEmptyFieldNamesTheEntryAndTheField() {
        let base: [String: String] = ["team_id": #""TEAMAAAAAA""#, "key_id": #""KEYAAAAAAA""#, "key_file": #""a.p8""#]
        for missing in ["team_id", "key_id", "key_file", "bundle_ids"] {
            var fields = base.filter { $0.key != missing }.map { "\"\($0.key)\":\($0.value)" }
            if missing != "bundle_ids" { fields.append(#""bundle_ids":["com.a.app"]"#) }
            let ok = #"{"team_id":"TEAMCCCCCC","key_id":"K","key_file":"c.p8","bundle_ids":["com.c.app"]}"#
            let r = refusal("[\(ok),{\(fields.joined(separator: ","))}]")
            #expect(r?.entry == 1, "\(missing)")
            #expect(r?.problem.contains("'\(missing)'") == true, "\(missing): \(String(describing: r))")
        }
        #expect(refusal(#"[{"team_id":"","key_id":"K","key_file":"a","bundle_ids":["com.a"]}]"#)?.problem.contains("team_id") == true)
        #expect(refusal(#"[{"team_id":"T","key_id":"K","key_file":"a","bundle_ids":[]}]"#)?.problem.contains("bundle_ids") == true)
        #expect(refusal(#"[{"team_id":"T","key_id":7,"key_file":"a","bundle_ids":["com.a"]}]"#)?.problem.contains("key_id") == true)
    }

    @Test func unknownFieldsAndBadBundleIDsAreRefused() {
        let r = refusal(#"[{"team_id":"T","key_id":"K","key_file":"a","bundle_ids":["com.a"],"bundle":"x"}]"#)
        #expect(r?.problem.contains("'bundle'") == true)
        #expect(r?.teamID == "T")
        for bad in [#""com.a.push-type.liveactivity""#, #"".com.a""#, #""com a""#, "7", #""""#] {
            #expect(refusal(#"[{"team_id":"T","key_id":"K","key_file":"a","bundle_ids":["# + bad + "]}]")?.entry == 0, "\(bad)")
        }
    }

    @Test func aBundleClaimedByTwoTeamsNamesBothEntries() {
        let r = refusal(
            #"[{"team_id":"TA","key_id":"KA","key_file":"a","bundle_ids":["com.x"]},"#
                + #"{"team_id":"TB","key_id":"KB","key_file":"b","bundle_ids":["com.y","com.x"]}]"#)
        #expect(r?.entry == 1)
        #expect(r?.teamID == "TB")
        #expect(r?.problem.contains("com.x") == true)
        #expect(r?.problem.contains("entry 0") == true)
    }

    @Test func aTeamListedTwiceIsRefused() {
        let r = refusal(
            #"[{"team_id":"TA","key_id":"KA","key_file":"a","bundle_ids":["com.x"]},"#
                + #"{"team_id":"TA","key_id":"KB","key_file":"b","bundle_ids":["com.y"]}]"#)
        #expect(r?.entry == 1)
        #expect(r?.problem.contains("entry 0") == true)
    }

    @Test func loadChecksEachKeyAndNamesTheEntryButNeverTheKey() throws {
        let dir = NSTemporaryDirectory() + "herald-teams-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let key = try P256PrivateKey.generate()
        let pem = try key.pkcs8PEM()
        try pem.write(toFile: dir + "/a.p8", atomically: true, encoding: .utf8)
        try "not a key\n".write(toFile: dir + "/bad.p8", atomically: true, encoding: .utf8)
        let file = dir + "/teams.json"
        try #"[{"team_id":"TA","key_id":"KA","key_file":"a.p8","bundle_ids":["com.a"]}]"#.write(
            toFile: file, atomically: true, encoding: .utf8)
        let loaded = try APNSTeamsFile.load(path: file)
        #expect(loaded.count == 1)
        #expect(loaded[0].credentials.teamID == "TA")
        #expect(try loaded[0].credentials.key.publicKey.pem() == key.publicKey.pem())

        try
            (#"[{"team_id":"TA","key_id":"KA","key_file":"a.p8","bundle_ids":["com.a"]},"#
            + #"{"team_id":"TB","key_id":"KB","key_file":"bad.p8","bundle_ids":["com.b"]}]"#).write(
                toFile: file, atomically: true, encoding: .utf8)
        do {
            _ = try APNSTeamsFile.load(path: file)
            Issue.record("a bad key file was accepted")
        } catch {
            #expect(error.entry == 1)
            #expect(error.teamID == "TB")
            #expect(error.problem.contains(dir + "/bad.p8"))
            #expect(!error.description.contains("PRIVATE KEY"))
        }
        try #"[{"team_id":"TA","key_id":"KA","key_file":"missing.p8","bundle_ids":["com.a"]}]"#.write(
            toFile: file, atomically: true, encoding: .utf8)
        #expect(throws: APNSTeamsFileError.self) { try APNSTeamsFile.load(path: file) }
        #expect(throws: APNSTeamsFileError.self) { try APNSTeamsFile.load(path: dir + "/nope.json") }
        #expect(!pem.isEmpty)
    }
}
