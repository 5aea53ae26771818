#!/usr/bin/env bash
# Issue #5, figures 4 and 5: fanout.sh at 10k, 100k and 1M subscribers — rate, ratio to
# h2load, CPU per delivery, peak RSS — written to Benchmarks/out/scaling.json and plotted
# to docs/performance.png. Ends with cost_growth_1m_vs_10k=<ratio of CPU per delivery>.
#
#   Benchmarks/scaling.sh [N...]     default 10000 100000 1000000
source "$(dirname "$0")/lib.sh"
SIZES=("$@"); [ ${#SIZES[@]} -gt 0 ] || SIZES=(10000 100000 1000000)
VENV="$ROOT/.build/bench-venv"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q 'matplotlib==3.9.2' >&2
RESULTS="$OUT/scaling.json"
echo "[" > "$RESULTS"
first=1
for n in "${SIZES[@]}"; do
  echo "== $n subscribers" >&2
  "$ROOT/Benchmarks/fanout.sh" "$n" | tee "$OUT/fanout-$n.txt" >&2
  row=$(python3 - "$n" "$OUT/fanout-$n.txt" <<'PY'
import json, sys
n, path = int(sys.argv[1]), sys.argv[2]
kv = dict(l.strip().split("=", 1) for l in open(path) if "=" in l and not l.startswith("machine"))
print(json.dumps({"subscribers": n, "rate": float(kv["herald_fanout_rate"]), "h2load": float(kv["h2load_rate"]),
  "ratio": float(kv["fanout_vs_h2load_ratio"]), "cpu_us": float(kv["herald_cpu_us_per_delivery"]),
  "peak_rss_mib": float(kv["peak_rss_mib"]), "rss_at_start_mib": float(kv["rss_at_fanout_start_mib"]),
  "fanout_rss_growth_mib": float(kv["fanout_rss_growth_mib"]), "seconds": float(kv["herald_fanout_seconds"])}))
PY
)
  [ $first -eq 1 ] || echo "," >> "$RESULTS"
  echo "$row" >> "$RESULTS"; first=0
done
echo "]" >> "$RESULTS"
"$VENV/bin/python" - "$RESULTS" "$ROOT/docs/performance.png" <<'PY'
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = json.load(open(sys.argv[1]))
n = [r["subscribers"] for r in rows]
fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
a.plot(n, [r["rate"] for r in rows], "o-", label="Herald fan-out")
a.plot(n, [r["h2load"] for r in rows], "s--", label="h2load, same simulator (the limit)")
a.set_xscale("log"); a.set_xlabel("subscribers"); a.set_ylabel("deliveries / s"); a.set_ylim(bottom=0)
a.set_title("Fan-out rate"); a.legend(); a.grid(True, alpha=0.3)
b.plot(n, [r["peak_rss_mib"] for r in rows], "o-", color="tab:red", label="peak RSS during the fan-out")
b.plot(n, [r["rss_at_start_mib"] for r in rows], "s--", color="tab:orange", label="RSS when the fan-out began")
b.plot(n, [r["fanout_rss_growth_mib"] for r in rows], "^-", color="tab:green", label="added by the fan-out")
b.axhline(256, color="gray", linestyle=":", label="target 256 MiB")
b.set_xscale("log"); b.set_xlabel("subscribers"); b.set_ylabel("MiB"); b.set_ylim(bottom=0)
b.set_title("Memory of herald serve"); b.legend(); b.grid(True, alpha=0.3)
fig.tight_layout(); fig.savefig(sys.argv[2], dpi=110)
PY
cat "$RESULTS"
python3 - "$RESULTS" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
print(f"cost_growth_1m_vs_10k={rows[-1]['cpu_us'] / rows[0]['cpu_us']:.2f}")
PY
