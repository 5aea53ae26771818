import Foundation
import Testing

@testable import HeraldCrypto

@Suite struct SecretFileTests {
    func mode(_ path: String) throws -> mode_t {
        var st = stat()
        try #require(stat(path, &st) == 0)
        return st.st_mode & 0o777
    }

    @Test func writeCreatesAPrivateFileThatReadsBack() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/admin-token"
            try SecretFile.write("s3cret\n", to: path)
            #expect(try mode(path) == 0o600)
            #expect(try SecretFile.read(path) == "s3cret\n")
            #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
        }
    }

    @Test func writeTightensAnExistingWorldReadableFile() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/admin-token"
            try "old".write(toFile: path, atomically: false, encoding: .utf8)
            try #require(chmod(path, 0o644) == 0)
            try #require(chmod(dir, 0o755) == 0)
            try "stale".write(toFile: path + ".tmp", atomically: false, encoding: .utf8)
            try #require(chmod(path + ".tmp", 0o666) == 0)
            try SecretFile.write("new", to: path)
            #expect(try mode(path) == 0o600)
            #expect(try SecretFile.read(path) == "new")
        }
    }

    @Test func writeDoesNotFollowASymlinkAtTheTemporaryPath() throws {
        try withTemporaryDirectory { dir in
            let target = dir + "/elsewhere"
            try "untouched".write(toFile: target, atomically: false, encoding: .utf8)
            try FileManager.default.createSymbolicLink(atPath: dir + "/key.tmp", withDestinationPath: target)
            let error = try #require(throws: CryptoError.self) { try SecretFile.write("secret", to: dir + "/key") }
            #expect(error.kind == .io(errno: ELOOP))
            #expect(try String(contentsOfFile: target, encoding: .utf8) == "untouched")
        }
    }

    @Test func errorsNameThePathButNeverTheContents() throws {
        let path = "/nonexistent-herald-dir/token"
        let error = try #require(throws: CryptoError.self) { try SecretFile.write("TOPSECRETVALUE", to: path) }
        #expect(error.kind == .io(errno: ENOENT))
        #expect(error.description.contains(path))
        #expect(!error.description.contains("TOPSECRETVALUE"))
        let readError = try #require(throws: CryptoError.self) { try SecretFile.read(path) }
        #expect(readError.kind == .io(errno: ENOENT))
        #expect(readError.description.contains(path))
    }

    @Test func readRefusesFilesLargerThanTheCap() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/big"
            try Data(count: SecretFile.maximumSize + 1).write(to: URL(fileURLWithPath: path))
            let error = try #require(throws: CryptoError.self) { try SecretFile.read(path) }
            #expect(error.kind == .io(errno: EFBIG))
        }
    }
}
