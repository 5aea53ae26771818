import Testing

@testable import HeraldCLI

@Test func cliListsItsCommands() { #expect(!HeraldCLI.commands.isEmpty) }
