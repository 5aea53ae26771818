extension HeraldCLI {
    /// Every verb, in the order `herald --help` lists them.
    public static let commands: [HeraldCommand.Type] = [
        ServeCommand.self,
        MigrateCommand.self,
        BackupCommand.self,
        ChannelsCommand.self,
        KeysCommand.self,
        WebhooksCommand.self,
        SubsCommand.self,
        PublishCommand.self,
        EventsCommand.self,
        APNSSimCommand.self,
        DemoCommand.self,
        VersionCommand.self,
    ]
}

/// `herald version`.
enum VersionCommand: HeraldCommand {
    static let name = "version"
    static let summary = "print the version"
    static let help = "Usage: herald version\n\nPrints Herald's version."
    static func run(_ args: inout Arguments, console: Console) throws -> Int32 {
        try args.finish()
        console.print("herald \(HeraldCLI.version)")
        return ExitCode.ok
    }
}
