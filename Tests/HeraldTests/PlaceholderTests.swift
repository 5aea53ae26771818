import Testing
@testable import HeraldCLI

@Test func cliModuleLinks() { _ = HeraldCLIModule.self }
