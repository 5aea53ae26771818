import Foundation
import HeraldCore
import HeraldCrypto

/// The files a simulator needs, made on first start when none are given: a self-signed
/// TLS certificate (the CA file Herald trusts) and an APNs signing key pair (the .p8 that
/// Herald signs with; the simulator checks with its public half).
public struct SimulatorFiles: Sendable {
    public let directory: String
    public let certificateFile: String
    public let privateKeyFile: String
    /// `AuthKey_<KEYID>.p8`, as Apple names it.
    public let apnsKeyFile: String
    public let keyID: String
    public let teamID: String

    /// Loads the files in `directory`, creating what is missing (mode 0600 for keys).
    /// Throws `SimulatorError.setup` naming the file at fault.
    public static func prepare(directory: String) throws -> SimulatorFiles {
        let fm = FileManager.default
        do {
            try fm.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw SimulatorError.setup("cannot create \(directory): \(error.localizedDescription)")
        }
        let identityFile = directory + "/identity.json"
        var keyID = ""
        var teamID = ""
        if let data = fm.contents(atPath: identityFile), let j = try? JSON.parse(data),
            let k = j["key_id"]?.stringValue, let t = j["team_id"]?.stringValue
        {
            keyID = k
            teamID = t
        } else {
            keyID = randomID()
            teamID = randomID()
            let identity = JSON.object(["key_id": .string(keyID), "team_id": .string(teamID)]).encoded()
            guard fm.createFile(atPath: identityFile, contents: Data(identity)) else {
                throw SimulatorError.setup("cannot write \(identityFile)")
            }
        }
        let cert = directory + "/sim-cert.pem"
        let key = directory + "/sim-key.pem"
        let p8 = directory + "/AuthKey_\(keyID).p8"
        do {
            if !fm.fileExists(atPath: cert) || !fm.fileExists(atPath: key) {
                let k = try P256PrivateKey.generate()
                let pem = try SelfSignedCertificate.generate(
                    key: k, commonName: "Herald APNs simulator", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1", "::1"],
                    validDays: 825)
                try SecretFile.write(try k.pkcs8PEM(), to: key)
                try pem.write(toFile: cert, atomically: true, encoding: .utf8)
            }
            if !fm.fileExists(atPath: p8) {
                try SecretFile.write(try P256PrivateKey.generate().pkcs8PEM(), to: p8)
            }
        } catch let e as SimulatorError {
            throw e
        } catch {
            throw SimulatorError.setup("cannot create simulator files in \(directory): \(error)")
        }
        return SimulatorFiles(
            directory: directory, certificateFile: cert, privateKeyFile: key, apnsKeyFile: p8, keyID: keyID, teamID: teamID)
    }

    /// The public half of the APNs key, for the simulator's JWT check.
    public func apnsPublicKey() throws -> P256PublicKey {
        try P256PrivateKey(contentsOfFile: apnsKeyFile).publicKey
    }

    /// A simulator configuration for these files.
    public func config() throws -> SimulatorConfig {
        SimulatorConfig(
            certificateFile: certificateFile, privateKeyFile: privateKeyFile, teamID: teamID, keyID: keyID,
            publicKey: try apnsPublicKey())
    }

    static func randomID() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return String(SecureRandom.bytes(10).map { alphabet[Int($0) % alphabet.count] })
    }
}
