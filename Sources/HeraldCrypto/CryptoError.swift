/// A failure of this module that is not an OpenSSL call failing: a PEM of the wrong kind,
/// a key on the wrong curve, an invalid argument, a file that cannot be read or written.
///
/// Messages name files and key types, never key material or file contents.
public struct CryptoError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, for code to branch on (tests assert on this, not on the message).
    public enum Kind: Sendable, Equatable {
        /// The text is not a PEM key of the expected form (or it is encrypted).
        case invalidKey
        /// A well-formed key that is not EC P-256 (an RSA key, another curve).
        case unsupportedKey
        /// An argument was out of range or malformed (a DNS name, an IP address, a day count).
        case invalidArgument
        /// A file could not be opened, read, written or renamed.
        case io(errno: Int32)
    }

    public let kind: Kind
    public let message: String
    /// The OpenSSL failure underneath, when there was one.
    public let underlying: OpenSSLError?

    public init(_ kind: Kind, _ message: String, underlying: OpenSSLError? = nil) {
        self.kind = kind
        self.message = message
        self.underlying = underlying
    }

    public var description: String {
        guard let underlying else { return message }
        return "\(message) (\(underlying))"
    }
}
