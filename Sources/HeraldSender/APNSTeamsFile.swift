import Foundation
import HeraldCore
import HeraldCrypto

/// One entry of a teams file (`HERALD_APNS_TEAMS_FILE`).
public struct APNSTeamEntry: Sendable, Equatable {
    public var teamID: String
    public var keyID: String
    /// The .p8 path as written in the file (relative: to the teams file's directory).
    public var keyFile: String
    public var bundleIDs: [String]
}

/// Why a teams file was refused: the file, the entry (0-based, and its `team_id` when it
/// has one) and what is wrong. Never key material.
public struct APNSTeamsFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var entry: Int?
    public var teamID: String?
    public var problem: String

    public var description: String {
        var location = "teams file \(path)"
        if let entry { location += ", entry \(entry)" + (teamID.map { " (team_id \($0))" } ?? "") }
        return "\(location): \(problem)"
    }
}

/// The teams file: `[{"team_id","key_id","key_file","bundle_ids":[...]}, ...]` — several
/// Apple developer accounts in one Herald, each with its own key, JWT and connections.
public enum APNSTeamsFile {
    static let fields: Set<String> = ["team_id", "key_id", "key_file", "bundle_ids"]

    /// Checks the shape of the file's text: a non-empty array of entries with exactly the
    /// four fields, non-empty strings, at least one bundle ID each (bare: no
    /// `.push-type.` suffix), one entry per team, and no bundle ID claimed by two teams.
    /// Pure: reads no key. Any thread.
    /// - Throws: `APNSTeamsFileError` naming the entry.
    public static func parse(_ bytes: [UInt8], path: String) throws(APNSTeamsFileError) -> [APNSTeamEntry] {
        func fail(_ entry: Int?, _ team: String?, _ problem: String) -> APNSTeamsFileError {
            APNSTeamsFileError(path: path, entry: entry, teamID: team, problem: problem)
        }
        guard let json = try? JSON.parse(bytes) else { throw fail(nil, nil, "not valid JSON") }
        guard let list = json.arrayValue else {
            throw fail(nil, nil, #"must be a JSON array of {"team_id","key_id","key_file","bundle_ids"} objects"#)
        }
        guard !list.isEmpty else { throw fail(nil, nil, "lists no team") }
        var entries: [APNSTeamEntry] = []
        var owner: [String: (entry: Int, team: String)] = [:]
        var teamEntry: [String: Int] = [:]
        for (i, item) in list.enumerated() {
            guard let o = item.objectValue else { throw fail(i, nil, "must be a JSON object") }
            let team = o["team_id"]?.stringValue
            if let k = o.keys.sorted().first(where: { !fields.contains($0) }) {
                throw fail(i, team, "unknown field '\(k)'; expected \(fields.sorted().joined(separator: ", "))")
            }
            func text(_ k: String) throws(APNSTeamsFileError) -> String {
                guard let v = o[k] else { throw fail(i, team, "'\(k)' is missing") }
                guard let s = v.stringValue, !s.trimmingCharacters(in: .whitespaces).isEmpty else {
                    throw fail(i, team, "'\(k)' must be a non-empty string")
                }
                return s
            }
            let teamID = try text("team_id")
            let keyID = try text("key_id")
            let keyFile = try text("key_file")
            guard let raw = o["bundle_ids"] else { throw fail(i, team, "'bundle_ids' is missing") }
            guard let array = raw.arrayValue, !array.isEmpty else {
                throw fail(i, team, "'bundle_ids' must be a non-empty array of bundle IDs")
            }
            var bundles: [String] = []
            for b in array {
                guard let s = b.stringValue, isBundleID(s) else {
                    throw fail(i, team, "'bundle_ids' holds \(b.text), not a bundle ID like com.example.app (no .push-type. suffix)")
                }
                if !bundles.contains(s) { bundles.append(s) }
            }
            if let first = teamEntry[teamID] {
                throw fail(i, team, "team \(teamID) is already entry \(first): give each team one entry with all its bundle_ids")
            }
            teamEntry[teamID] = i
            for b in bundles {
                if let o = owner[b] {
                    throw fail(
                        i, team, "bundle '\(b)' is also claimed by entry \(o.entry) (team_id \(o.team)): a bundle belongs to one team")
                }
                owner[b] = (i, teamID)
            }
            entries.append(APNSTeamEntry(teamID: teamID, keyID: keyID, keyFile: keyFile, bundleIDs: bundles))
        }
        return entries
    }

    /// Reads and checks the file at `path`, then each entry's key: readable, a P-256
    /// private key, able to sign a JWT. Blocking file I/O (start-up only).
    /// - Throws: `APNSTeamsFileError` naming the entry and the key file (never its contents).
    public static func load(path: String) throws(APNSTeamsFileError) -> [(entry: APNSTeamEntry, credentials: APNSCredentials)] {
        let bytes: [UInt8]
        do {
            let url = URL(fileURLWithPath: path)
            let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
            guard size <= 1 << 20 else { throw APNSTeamsFileError(path: path, problem: "is larger than 1 MiB") }
            bytes = Array(try Data(contentsOf: url))
        } catch let e as APNSTeamsFileError {
            throw e
        } catch {
            throw APNSTeamsFileError(path: path, problem: "cannot be read: \((error as NSError).localizedDescription)")
        }
        let entries = try parse(bytes, path: path)
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var out: [(APNSTeamEntry, APNSCredentials)] = []
        for (i, e) in entries.enumerated() {
            let keyPath = e.keyFile.hasPrefix("/") ? e.keyFile : directory + "/" + e.keyFile
            let key: P256PrivateKey
            do {
                key = try P256PrivateKey(contentsOfFile: keyPath)
                _ = try APNSJWT.sign(keyID: e.keyID, teamID: e.teamID, issuedAt: 0, key: key)
            } catch {
                throw APNSTeamsFileError(path: path, entry: i, teamID: e.teamID, problem: "cannot use key_file \(keyPath): \(error)")
            }
            out.append((e, APNSCredentials(keyID: e.keyID, teamID: e.teamID, key: key)))
        }
        return out
    }

    /// A bare bundle ID: letters, digits, `.` and `-`, at most 155 characters, not
    /// starting or ending with a dot, without Herald's `.push-type.` suffix (the rule the API
    /// applies to a channel's `bundle_id`).
    static func isBundleID(_ s: String) -> Bool {
        guard !s.isEmpty, s.utf8.count <= 155, !s.hasPrefix("."), !s.hasSuffix("."), !s.contains(".push-type.") else { return false }
        return s.utf8.allSatisfy { c in
            (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 46 || c == 45
        }
    }
}

extension APNSTeamsFileError {
    init(path: String, problem: String) { self.init(path: path, entry: nil, teamID: nil, problem: problem) }
}
