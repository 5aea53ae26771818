extension EventsCommand {
    static var help: String {
        """
        Usage: herald events <sub-command> [options]

        A channel's events on a running Herald server (needs a publisher key scoped to the
        channel, or an admin key): the listing, one event's progress, and cancelling an
        event scheduled with send_at before it goes out.

        Sub-commands (herald events <sub-command> --help for each):
          list CHANNEL [--state S] [--limit N] [--before SEQ]   the channel's events, newest first
          show CHANNEL EVENT                                    one event and its progress
          cancel CHANNEL EVENT                                  cancel a scheduled event

        \(AdminOptions.helpText)

        Example:
          herald events list match-final --state scheduled
        """
    }

    static func help(subcommand: String?) -> String {
        switch subcommand {
        case "list": listHelp
        case "show": showHelp
        case "cancel": cancelHelp
        default: help
        }
    }

    static var listHelp: String {
        """
        Usage: herald events list CHANNEL [--state S] [--limit N] [--before SEQ] [--json]

        Lists the channel's events, newest first (GET /v1/channels/CHANNEL/events): seq, id,
        kind, state, when a scheduled one goes out, targets, sent, failed, when posted. A
        scheduled event is listed at its provisional seq until it is sent. When there are
        more, the command for the next page is printed on stderr.

        Options:
          --state S           only events in state S: queued, sending, done, superseded,
                              failed, scheduled, cancelled (default: all)
          --limit N           events per page, 1-1000 (default 50)
          --before SEQ        only events with a seq below SEQ (the next page)

        \(AdminOptions.helpText)

        Example:
          herald events list match-final --limit 20
        """
    }

    static var showHelp: String {
        """
        Usage: herald events show CHANNEL EVENT [--json]

        Shows one event (GET /v1/channels/CHANNEL/events/EVENT): its state, send_at, counters,
        failure reason, timestamps.

        \(AdminOptions.helpText)

        Example:
          herald events show match-final evt_abc123
        """
    }

    static var cancelHelp: String {
        """
        Usage: herald events cancel CHANNEL EVENT [--json]

        Cancels an event scheduled with send_at (DELETE /v1/channels/CHANNEL/events/EVENT): it
        will never be sent. Fails (exit 1, the server's 409 not_scheduled) once it is sending
        or finished.

        \(AdminOptions.helpText)

        Example:
          herald events cancel match-final evt_abc123
        """
    }
}
