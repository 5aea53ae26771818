import Foundation

/// The `herald` command line: dispatches to a verb. Returns the process exit code.
public enum HeraldCLI {

    static let overview = """
        herald — broadcast Live Activity updates through APNs

        Usage: herald <command> [options]     herald <command> --help for details

        """

    public static func main(_ argv: [String], environment: [String: String], console: Console = Console()) -> Int32 {
        var argv = argv
        guard let verb = argv.first, verb != "--help", verb != "-h", verb != "help" else {
            console.print(overviewText())
            return argv.isEmpty ? ExitCode.usage : ExitCode.ok
        }
        argv.removeFirst()
        if verb == "--version" || verb == "version" {
            console.print("herald \(version)")
            return ExitCode.ok
        }
        guard let command = commands.first(where: { $0.name == verb }) else {
            console.error("herald: unknown command '\(verb)'. Run 'herald --help' for the list.")
            return ExitCode.usage
        }
        var args = Arguments(argv, environment: environment)
        if args.wantsHelp {
            var peek = args
            console.print(command.help(subcommand: peek.nextPositional()))
            return ExitCode.ok
        }
        do {
            return try command.run(&args, console: console)
        } catch let e as UsageError {
            console.error("herald \(verb): \(e.message)\nRun 'herald \(verb) --help' for usage.")
            return ExitCode.usage
        } catch let e as CommandFailure {
            console.error("herald \(verb): \(e.message)")
            return ExitCode.failure
        } catch {
            console.error("herald \(verb): \(error)")
            return ExitCode.failure
        }
    }

    static func overviewText() -> String {
        let width = (commands.map { $0.name.count }.max() ?? 8) + 2
        let lines = commands.map { "  " + $0.name.padding(toLength: width, withPad: " ", startingAt: 0) + $0.summary }
        return overview + "Commands:\n" + lines.joined(separator: "\n")
    }

    public static let version = "0.1.0"
}
