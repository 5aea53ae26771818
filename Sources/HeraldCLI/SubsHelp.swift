extension SubsCommand {
    static var help: String {
        """
        Usage: herald subs <sub-command> [options]

        Register and unregister Live Activity push tokens on a channel (admin key, or a
        subscriber key scoped to the channel).

        Sub-commands (herald subs <sub-command> --help for each):
          add CHANNEL TOKEN... [--kind K] [--expires-at UNIX]   register tokens
          import CHANNEL FILE [--kind K] [--batch-size N]       bulk-register a file of tokens
          remove CHANNEL TOKEN...                               unregister tokens

        \(AdminOptions.helpText)

        Example:
          herald subs add match-1 8f3a...e01c
        """
    }

    static func help(subcommand: String?) -> String {
        switch subcommand {
        case "add": addHelp
        case "import": importHelp
        case "remove": removeHelp
        default: help
        }
    }

    static let entryOptions = """
          --kind K            activity (a running Live Activity's update token) or push-to-start
                              (default: the server's, activity)
          --expires-at UNIX   when the subscription lapses, unix seconds (default: the server's, 12 h)
        """

    static var addHelp: String {
        """
        Usage: herald subs add CHANNEL TOKEN... [--kind activity|push-to-start] [--expires-at UNIX]

        Registers hex push tokens on CHANNEL. One token: PUT /v1/channels/CHANNEL/subscriptions/TOKEN
        (says whether it was new); several: one POST .../subscriptions:batch.

        Options:
        \(entryOptions)

        \(AdminOptions.helpText)

        Example:
          herald subs add match-1 8f3ae01c... 77b0c2d4... --kind activity
        """
    }

    static var importHelp: String {
        """
        Usage: herald subs import CHANNEL FILE [--kind activity|push-to-start] [--expires-at UNIX]
                                 [--batch-size N] [--no-catch-up]

        Streams FILE (one hex token per line; blank lines and lines starting with # skipped;
        - reads standard input) to CHANNEL in batches through POST .../subscriptions:batch,
        showing progress on standard error, and ends with the totals and tokens per second.
        A token the server refuses stops the import with its line number; earlier batches stay.
        New activity tokens are late joiners: each is sent the channel's current state, if it
        has one, unless --no-catch-up (tokens whose activities already show it: a migration).

        Options:
        \(entryOptions)
          --batch-size N      tokens per request, 1 to 100000 (default 10000)
          --no-catch-up       do not send the current state to the new tokens

        \(AdminOptions.helpText)

        Example:
          herald subs import match-1 tokens.txt --batch-size 20000
        """
    }

    static var removeHelp: String {
        """
        Usage: herald subs remove CHANNEL TOKEN...

        Unregisters tokens from CHANNEL. One token: DELETE /v1/channels/CHANNEL/subscriptions/TOKEN
        (fails if it was not subscribed); several: one POST .../subscriptions:batch.

        \(AdminOptions.helpText)

        Example:
          herald subs remove match-1 8f3ae01c...
        """
    }
}
