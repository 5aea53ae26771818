import Testing
@testable import HeraldSQL

@Test func HeraldSQLModuleLinks() { _ = HeraldSQLModule.self }
