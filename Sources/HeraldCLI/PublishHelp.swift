extension PublishCommand {
    static var help: String {
        """
        Usage: herald publish CHANNEL (--file F | --json J) [--priority 5|10] [--expiration UNIX]
                              [--send-at UNIX] [--idempotency-key K] [--dry-run] [--wait]

        Publishes one Live Activity event to CHANNEL (POST /v1/channels/CHANNEL/events) and
        prints its id, sequence number and state. The JSON is either a whole publish body
        ({"aps":{...}, "priority":10}) or just the aps dictionary, which is wrapped.

        Options:
          --file F            read the event from file F (- for standard input)
          --json J            the event as a JSON string
          --priority P        5 (low, budgeted by APNs) or 10 (immediate) (default: the JSON's, else the server's)
          --expiration UNIX   until when APNs may store it, unix seconds; 0 for no storage (default: the server's)
          --send-at UNIX      send it at that time (unix seconds, at most 7 days ahead): stored now as
                              scheduled; list or cancel it with herald events (default: now)
          --idempotency-key K the same key on the same channel within 24 h returns the first event
          --dry-run           validate and render only: payload size against the limit, targets; sends nothing
          --wait              follow delivery until the event is done, superseded, failed or cancelled: a
                              live progress line on standard error, then a summary (a scheduled event
                              waits for its time). Exit 0 done/superseded, 1 failed/cancelled.

        \(AdminOptions.connectionHelp)

        Examples:
          herald publish match-1 --json '{"event":"update","content-state":{"home":2,"away":1}}' --wait
          herald publish match-1 --file end.json --priority 10 --idempotency-key final-whistle
        """
    }
}
