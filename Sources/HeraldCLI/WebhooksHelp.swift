extension WebhooksCommand {
    static var help: String {
        """
        Usage: herald webhooks <sub-command> [options]

        Manage webhooks on a running Herald server (needs an admin key). Herald POSTs signed
        JSON to a webhook's URL when an event finishes, tokens are pruned, a channel closes
        or the pruning guard trips (docs/api.md, "Webhooks").

        Sub-commands (herald webhooks <sub-command> --help for each):
          create URL --events E... [--channels P...]   create a webhook; prints its secret once
          list                                         list webhooks (never their secrets)
          delete ID                                    delete a webhook and its waiting deliveries

        \(AdminOptions.helpText)

        Example:
          herald webhooks create https://backend.example.com/herald --events subscription.pruned --channels 'match-*'
        """
    }

    static func help(subcommand: String?) -> String {
        switch subcommand {
        case "create": createHelp
        case "list": listHelp
        case "delete": deleteHelp
        default: help
        }
    }

    static var createHelp: String {
        """
        Usage: herald webhooks create URL --events E... [--channels P...] [--json]

        Creates a webhook (POST /v1/webhooks) and prints its signing secret, shown this once.
        URL must be https:// (http:// only to a loopback address).

        Options:
          --events E...       event.finished, subscription.pruned, channel.closed, prune_guard.tripped (one or more, required)
          --channels P...     channel ids, or prefixes ending in * ('match-*'); default: every channel

        \(AdminOptions.helpText)

        Example:
          herald webhooks create https://backend.example.com/herald --events event.finished channel.closed
        """
    }

    static var listHelp: String {
        """
        Usage: herald webhooks list [--json]

        Lists webhooks (GET /v1/webhooks): id, URL, event types, channels, when created.

        \(AdminOptions.helpText)

        Example:
          herald webhooks list
        """
    }

    static var deleteHelp: String {
        """
        Usage: herald webhooks delete ID [--json]

        Deletes webhook ID (DELETE /v1/webhooks/ID) and the deliveries still waiting for it.

        \(AdminOptions.helpText)

        Example:
          herald webhooks delete whk_abc123
        """
    }
}
