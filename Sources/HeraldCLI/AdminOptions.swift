import Foundation

/// The options every client verb (`channels`, `keys`, `subs`, `publish`) shares: where the
/// server is, which key to use, how long to wait, and `--json`. The one place these flags
/// and their environment variables are mapped.
struct AdminOptions {
    static let defaultServer = "http://127.0.0.1:8080"
    static let defaultDB = "./herald.db"

    var server: URL
    /// `--token` or `HERALD_ADMIN_TOKEN`, with which of the two it was.
    var explicitToken: (value: String, source: String)?
    /// `--token-file` when given, else nil (then `<db>.admin-token`).
    var tokenFile: String?
    var db: String
    var timeout: Double
    var json: Bool

    /// Consumes the shared options from `args`; `jsonFlag` false leaves `--json` to the verb
    /// (publish takes the event with it). Throws `UsageError` on a malformed value.
    static func read(_ args: inout Arguments, jsonFlag: Bool = true) throws -> AdminOptions {
        let serverText = try args.option("--server", env: "HERALD_SERVER", default: defaultServer)
        var token = try args.option("--token").map { ($0, "--token") }
        if token == nil, let t = args.environment["HERALD_ADMIN_TOKEN"], !t.isEmpty { token = (t, "HERALD_ADMIN_TOKEN") }
        let tokenFile = try args.option("--token-file")
        let db = try args.option("--db", env: "HERALD_DB", default: defaultDB)
        let timeoutText = try args.option("--timeout", default: "10")
        guard let timeout = Double(timeoutText), timeout > 0, timeout <= 86_400 else {
            throw UsageError("--timeout must be a number of seconds above 0, got '\(timeoutText)'")
        }
        let json = jsonFlag && args.flag("--json")
        return AdminOptions(
            server: try parseServer(serverText), explicitToken: token, tokenFile: tokenFile, db: db, timeout: timeout,
            json: json)
    }

    /// `http://host:port[/prefix]`; a bare `host:port` is taken as http.
    static func parseServer(_ text: String) throws -> URL {
        var t = text.trimmingCharacters(in: .whitespaces)
        if !t.contains("://") { t = "http://" + t }
        while t.hasSuffix("/") { t.removeLast() }
        guard let url = URL(string: t), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else {
            throw UsageError("--server must be a URL like http://127.0.0.1:8080, got '\(text)'")
        }
        return url
    }

    /// The file `herald serve` writes its admin token to, beside its database.
    var tokenFilePath: String { tokenFile ?? StorageTarget(db).defaultAdminTokenFile }

    /// The key to send, and where it came from (for error messages). Throws
    /// `CommandFailure` when there is none.
    func resolveToken() throws -> (token: String, source: String) {
        if let (value, source) = explicitToken {
            let t = value.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !t.isEmpty else { throw CommandFailure("the token given by \(source) is empty") }
            return (t, source)
        }
        let path = tokenFilePath
        guard FileManager.default.fileExists(atPath: path) else {
            throw CommandFailure(
                "no API token: set HERALD_ADMIN_TOKEN or pass --token, or point --token-file (or --db / HERALD_DB) "
                    + "at the file `herald serve` writes beside its database (looked for \(path): not found)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandFailure("cannot read the token file \(path) (permissions?); set HERALD_ADMIN_TOKEN or pass --token")
        }
        let t = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !t.isEmpty else {
            throw CommandFailure("the token file \(path) is empty; set HERALD_ADMIN_TOKEN or pass --token")
        }
        return (t, "the file \(path)")
    }

    /// A client for the server; resolves the token now (so usage errors come first).
    func client() throws -> AdminClient {
        let (token, source) = try resolveToken()
        return AdminClient(server: server, token: token, tokenSource: source, timeout: timeout)
    }

    /// Help lines for these options, shared by every client verb.
    static let helpText =
        connectionHelp + """

              --json              print the server's JSON (pretty-printed, sorted keys) instead of text
            """

    /// `helpText` without `--json` (publish).
    static let connectionHelp = """
        Connection options (every client verb):
          --server URL        the Herald server (env HERALD_SERVER, default \(defaultServer))
          --token T           API key: admin, or a publisher key for publish, a subscriber key for subs
                              (env HERALD_ADMIN_TOKEN; default: read from --token-file)
          --token-file F      file holding the key (default <db>.admin-token, the file `herald serve` writes)
          --db PATH           the server's database, to find its token file (env HERALD_DB, default \(defaultDB))
          --timeout S         seconds to wait for each answer (default 10)
        """
}
