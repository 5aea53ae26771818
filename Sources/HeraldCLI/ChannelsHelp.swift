extension ChannelsCommand {
    static var help: String {
        """
        Usage: herald channels <sub-command> [options]

        Manage channels on a running Herald server (needs an admin key).

        Sub-commands (herald channels <sub-command> --help for each):
          create ID --bundle-id B [--mode M] [--env E] [--storage S]   create a channel
          list                                                         list every channel
          show ID                                                      one channel, its subscribers and last event
          close ID                                                     close: no more publishes, subscriptions dropped
          reconcile [--apply]                                          APNs' channels vs Herald's: orphans, lost ones

        \(AdminOptions.helpText)

        Examples:
          herald channels create match-1 --bundle-id com.example.app --mode hybrid
          herald channels list --json
        """
    }

    static func help(subcommand: String?) -> String {
        switch subcommand {
        case "create": createHelp
        case "list": listHelp
        case "show": showHelp
        case "close": closeHelp
        case "reconcile": reconcileHelp
        default: help
        }
    }

    static var createHelp: String {
        """
        Usage: herald channels create ID --bundle-id B [--mode fanout|broadcast|hybrid]
                                      [--env sandbox|production] [--storage none|most-recent]
                                      [--no-catch-up] [--min-interval-ms MS] [--priority10-budget N]

        Creates channel ID (POST /v1/channels) and prints it.

        Options:
          --bundle-id B       the iOS app's bundle ID (required)
          --mode M            fanout (Herald sends to each token), broadcast (APNs channel, iOS 18+)
                              or hybrid (both) (default: the server's, fanout)
          --env E             APNs environment: sandbox or production (default: the server's, production)
          --storage S         APNs message storage for broadcast: none or most-recent (default: none)
          --no-catch-up       do not send late joiners the current state (default: send it)
          --min-interval-ms MS  start updates at least MS apart; a waiting update is replaced by a
                              newer one (default 0)
          --priority10-budget N  priority-10 events per rolling hour, then priority 5 (default 0: no budget)

        \(AdminOptions.helpText)

        Example:
          herald channels create match-1 --bundle-id com.example.app --mode hybrid --env sandbox
        """
    }

    static var listHelp: String {
        """
        Usage: herald channels list [--json]

        Lists every channel (GET /v1/channels) as a table: mode, environment, state,
        subscribers and the last event.

        \(AdminOptions.helpText)

        Example:
          herald channels list --server http://10.0.0.5:8080
        """
    }

    static var showHelp: String {
        """
        Usage: herald channels show ID [--json]

        Shows one channel (GET /v1/channels/ID): its settings, subscriber counts and last event.

        \(AdminOptions.helpText)

        Example:
          herald channels show match-1
        """
    }

    static var closeHelp: String {
        """
        Usage: herald channels close ID [--json]

        Closes channel ID (DELETE /v1/channels/ID): no more publishes, its subscriptions are
        dropped and its APNs channel deleted. Prints the closed channel.

        \(AdminOptions.helpText)

        Example:
          herald channels close match-1
        """
    }
}
