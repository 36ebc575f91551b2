#!/usr/bin/env python3
"""bench/jain.py - fairness of flows that ran at once, per whole second.

  jain.py CAP_MBPS xfer CSV...     ri2n-xfer --csv files (cumulative bytes on a common clock)
  jain.py CAP_MBPS iperf JSON...   iperf3 -J -i 1 files (started together: aligned by interval)

Takes the whole seconds in which every flow ran (the first one skipped: start-up), prints each
one's Mbit/s per flow, the total and Jain's index, then one line
  min_jain=.. mean_jain=.. min_agg=.. mean_mbps=.. seconds=..
with the aggregate as a fraction of CAP_MBPS (the receiver's rails).
"""
import json
import sys


def jain(x):
    s, s2 = sum(x), sum(v * v for v in x)
    return s * s / (len(x) * s2) if s2 > 0 else 1.0


def xfer_series(path):
    pts = []
    for line in open(path):
        f = line.strip().split(",")
        if len(f) >= 5 and f[0] == "send":
            pts.append((float(f[2]), float(f[4])))
    return pts


def at(pts, t):
    """Cumulative bytes at time t, interpolated."""
    for (t0, b0), (t1, b1) in zip(pts, pts[1:]):
        if t0 <= t <= t1:
            return b0 + (b1 - b0) * (t - t0) / (t1 - t0) if t1 > t0 else b1
    return None


def per_second_xfer(paths):
    series = [xfer_series(p) for p in paths]
    if any(len(s) < 2 for s in series):
        return []
    start = max(s[0][0] for s in series) + 1.0
    end = min(s[-1][0] for s in series)
    rows, t = [], start
    while t + 1.0 <= end:
        rows.append([(at(s, t + 1.0) - at(s, t)) * 8 / 1e6 for s in series])
        t += 1.0
    return rows


def per_second_iperf(paths):
    series = []
    for p in paths:
        v = json.load(open(p))
        series.append([i["sum"]["bytes"] * 8 / 1e6 / max(i["sum"]["seconds"], 1e-9)
                       for i in v.get("intervals", [])])
    n = min((len(s) for s in series), default=0)
    return [[s[k] for s in series] for k in range(1, n - 1)]


def main():
    cap, kind, paths = float(sys.argv[1]), sys.argv[2], sys.argv[3:]
    rows = per_second_xfer(paths) if kind == "xfer" else per_second_iperf(paths)
    if not rows:
        print("no whole second with every flow running", file=sys.stderr)
        return 1
    js = [jain(r) for r in rows]
    for k, (r, j) in enumerate(zip(rows, js), 1):
        print("second %d: %s  total %.0f Mbit/s  Jain %.3f" %
              (k, " ".join("%.0f" % x for x in r), sum(r), j))
    print("min_jain=%.3f mean_jain=%.3f min_agg=%.3f mean_mbps=%.1f seconds=%d" %
          (min(js), sum(js) / len(js), min(sum(r) for r in rows) / cap,
           sum(sum(r) for r in rows) / len(rows), len(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
