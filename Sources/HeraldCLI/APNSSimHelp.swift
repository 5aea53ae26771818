extension APNSSimCommand {
    static var help: String {
        """
        Usage: herald apns-sim [--listen ADDR] [--control ADDR|none] [--dir DIR] [--max-streams N]
                               [--threads N] [--faults SPEC] [--no-ledger] [--teams-file FILE]

        Runs a local stand-in for APNs: HTTP/2 over TLS with the token, broadcast and channel
        endpoints, JWT checks against its own .p8 key, APNs' status codes and reasons, a ledger
        of what each token received and fault injection. On first start it creates a TLS
        certificate and an APNs key pair in DIR; it prints the environment variables that
        point `herald serve` at it. Runs until SIGINT or SIGTERM.

        Options:
          --listen ADDR       the APNs endpoint (env HERALD_SIM_LISTEN, default 127.0.0.1:2197)
          --control ADDR      the control/ledger HTTP interface, or none
                              (env HERALD_SIM_CONTROL, default 127.0.0.1:2198)
          --dir DIR           where the certificate, key and .p8 live (env HERALD_SIM_DIR, default ./apns-sim)
          --max-streams N     SETTINGS_MAX_CONCURRENT_STREAMS once a connection is authorised (default 1000)
          --streams-before-auth N  the limit before a connection has sent a valid JWT (default 1, as
                              APNs; load generators such as h2load need --max-streams here)
          --threads N         event-loop threads (default 1)
          --faults SPEC       injected faults (env HERALD_SIM_FAULTS, default none), comma-separated:
                              500=0.05 (status=probability), latency-ms=5, goaway-after=1000,
                              goaway-reason=Shutdown, dead-rate=0.01, bad-token-rate=0.01,
                              retry-after=1, slow-read-ms=2, streams-after-error=1
          --no-ledger         do not record pushes (for raw-speed benchmarks)
          --teams-file FILE   more Apple teams to accept (env HERALD_SIM_TEAMS_FILE): the teams file
                              herald serve takes; each team's key and bundles are accepted besides
                              the simulator's own key, and a bundle on another team's connection is
                              403 TopicMismatch

        Control interface (JSON): GET /healthz, /stats, /tokens, /tokens/HEX, /channels,
        /channels/ID/broadcasts, /faults, /teams; PUT /faults {"spec":…}, /settings {"max_concurrent_streams":N};
        POST /dead-tokens {"tokens":[…]}, /reset, /goaway {"reason":…}, /disconnect,
        /channels {"bundle_id":…,"count":N} (plants channels); DELETE /channels/ID.

        Example:
          herald apns-sim --faults 500=0.01,latency-ms=2
        """
    }
}
