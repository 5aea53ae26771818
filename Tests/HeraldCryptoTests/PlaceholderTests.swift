import Testing
@testable import HeraldCrypto

@Test func HeraldCryptoModuleLinks() { _ = HeraldCryptoModule.self }
