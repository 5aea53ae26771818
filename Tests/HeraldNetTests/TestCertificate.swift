import Foundation

/// A throw-away self-signed certificate for 127.0.0.1/::1/localhost, made with the
/// `openssl` CLI (an independent tool, so the TLS layer is not tested against itself).
enum TestCertificate {
    static let dir: String = {
        let d = NSTemporaryDirectory() + "herald-net-tests-\(getpid())"
        try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", d + "/key.pem", "-out", d + "/cert.pem", "-days", "2", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1",
        ]
        p.standardError = FileHandle.nullDevice
        try! p.run()
        p.waitUntilExit()
        return d
    }()
    static var cert: String { dir + "/cert.pem" }
    static var key: String { dir + "/key.pem" }
}
