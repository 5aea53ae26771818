import Testing

@testable import HeraldStore

/// A scan batch's tokens in one buffer: every way in gives back the same tokens, in order.
@Suite struct TokenRowsTests {
    /// Tokens of lengths 1…40 (a real one is 32 bytes; nothing here assumes it).
    static let tokens: [[UInt8]] = (1...40).map { n in (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ n) } }

    @Test func everyWayInGivesBackTheSameTokensInOrder() {
        let literal: TokenRows = [[1, 2, 3], [4], [5, 6]]
        #expect(Array(literal) == [[1, 2, 3], [4], [5, 6]])

        var typed = TokenRows()
        var raw = TokenRows(capacity: 2)  // grows past its capacity
        for t in Self.tokens {
            typed.append(t)
            t.withUnsafeBytes { raw.append($0) }
        }
        #expect(Array(typed) == Self.tokens)
        #expect(raw == typed)
        #expect(TokenRows(Self.tokens) == typed)
        #expect(typed.count == 40 && typed.last == Self.tokens[39] && typed.first == [1])
        for i in typed.indices {
            #expect(typed.withToken(i) { Array($0) } == Self.tokens[i])
        }
    }

    @Test func equalOnlyForTheSameTokens() {
        // The same bytes cut differently are different tokens.
        #expect(TokenRows([[1, 2], [3]]) != TokenRows([[1], [2, 3]]))
        #expect(TokenRows([[1, 2]]) != TokenRows([[1, 2], [3]]))
        #expect(TokenRows().isEmpty && TokenRows() == [])
        #expect(TokenRows([[9]]).description == "[[9]]")
    }
}
