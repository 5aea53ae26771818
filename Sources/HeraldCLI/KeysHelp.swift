extension KeysCommand {
    static var help: String {
        """
        Usage: herald keys <sub-command> [options]

        Manage API keys on a running Herald server (needs an admin key). A publisher key may
        publish to its channels; a subscriber key may register tokens on them (safe to give
        to an app backend); an admin key may do everything.

        Sub-commands (herald keys <sub-command> --help for each):
          create --role R --channels PATTERN... [--label L]   create a key; prints its secret once
          list                                                list keys (never their secrets)
          revoke ID                                           revoke a key at once

        \(AdminOptions.helpText)

        Example:
          herald keys create --role publisher --channels 'match-*' --label "score feed"
        """
    }

    static func help(subcommand: String?) -> String {
        switch subcommand {
        case "create": createHelp
        case "list": listHelp
        case "revoke": revokeHelp
        default: help
        }
    }

    static var createHelp: String {
        """
        Usage: herald keys create --role publisher|subscriber|admin --channels PATTERN... [--label L]

        Creates a key (POST /v1/keys) and prints its secret. The secret is shown this once:
        the server stores only a hash of it.

        Options:
          --role R            publisher, subscriber or admin (required)
          --channels P...     channel ids, or prefixes ending in * ('match-*'), one or more (required)
          --label L           a note to recognise the key by (default: none)

        \(AdminOptions.helpText)

        Example:
          herald keys create --role subscriber --channels 'match-*' 'flight-*' --label "app backend"
        """
    }

    static var listHelp: String {
        """
        Usage: herald keys list [--json]

        Lists keys (GET /v1/keys): id, role, channels, label, when created, last used, revoked.
        Secrets are never shown.

        \(AdminOptions.helpText)

        Example:
          herald keys list
        """
    }

    static var revokeHelp: String {
        """
        Usage: herald keys revoke ID [--json]

        Revokes key ID (DELETE /v1/keys/ID): requests made with it are refused from now on.

        \(AdminOptions.helpText)

        Example:
          herald keys revoke key_abc123
        """
    }
}
