"""aioapns (a widely used Python APNs client) sending N Live Activity pushes to the
Herald APNs simulator: the way users would otherwise do it. Prints aioapns_rate=<n/s>.

usage: peer.py N HOST PORT CA_FILE KEY_FILE KEY_ID TEAM_ID TOKENS_FILE [CONNECTIONS] [CONCURRENCY]
"""
import asyncio, json, logging, ssl, sys, time

from aioapns import APNs, NotificationRequest, PushType
from aioapns import connection as conn

logging.getLogger("aioapns").setLevel(logging.ERROR)

n, host, port, ca, key, key_id, team = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7]
tokens_file = sys.argv[8]
connections = int(sys.argv[9]) if len(sys.argv) > 9 else 4
concurrency = int(sys.argv[10]) if len(sys.argv) > 10 else 2000
n = int(n)

# Point aioapns at the simulator: its hosts are class attributes.
for cls in (conn.APNsProductionClientProtocol, conn.APNsDevelopmentClientProtocol):
    cls.APNS_SERVER = host
    cls.APNS_PORT = port
ctx = ssl.create_default_context(cafile=ca)
ctx.set_alpn_protocols(["h2"])

tokens = [t.strip() for t in open(tokens_file) if t.strip()][:n]
payload = {"aps": {"event": "update", "timestamp": 1767225600, "content-state": {"home": 1, "away": 0, "minute": 63, "status": "live"}}}


async def main():
    client = APNs(key=open(key).read(), key_id=key_id, team_id=team, topic="com.example.app.push-type.liveactivity",
                  use_sandbox=True, max_connections=connections, ssl_context=ctx)
    # Warm up: connections open before the clock starts.
    await client.send_notification(NotificationRequest(device_token=tokens[0], message=payload, push_type=PushType.LIVEACTIVITY, priority=5))
    sem = asyncio.Semaphore(concurrency)
    failed = 0

    async def one(t):
        nonlocal failed
        async with sem:
            r = await client.send_notification(NotificationRequest(device_token=t, message=payload, push_type=PushType.LIVEACTIVITY, priority=5))
            if not r.is_successful:
                failed += 1

    t0 = time.time()
    await asyncio.gather(*(one(t) for t in tokens))
    dt = time.time() - t0
    print(f"aioapns_requests={len(tokens)}")
    print(f"aioapns_failed={failed}")
    print(f"aioapns_seconds={dt:.2f}")
    print(f"aioapns_rate={len(tokens) / dt:.0f}")

asyncio.run(main())
