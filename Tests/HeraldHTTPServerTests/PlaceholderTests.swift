import Testing
@testable import HeraldHTTPServer

@Test func HeraldHTTPServerModuleLinks() { _ = HeraldHTTPServerModule.self }
