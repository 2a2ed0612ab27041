"""Score an inspection report against the simulated cluster's answer key.

    python3 tools/simcluster/score.py REPORT.json ANSWER_KEY.json [--details]

Prints `score: found F/E expected findings, A false alarms (P0-P2 nobody injected); cluster: f/e` and exits 1
when something expected is missing or a false alarm was raised. The rules are the answer key's own
(`rules` in answer_key.json): every (check, component) listed for a host must be reported for it; a P0-P2
node finding not listed is a false alarm (P3 advice is allowed); each cluster entry must be reported as a
cluster finding with that check and component.
"""

from __future__ import annotations

import argparse
import json
import sys


def score(report: dict, key: dict) -> dict:
    missing, alarms = [], []
    nodes = report.get("nodes") or {}
    for host, expected in sorted((key.get("hosts") or {}).items()):
        node = nodes.get(host)
        got = {(f["check"], f["component"]) for f in (node or {}).get("findings", [])}
        missing += [(host, e["check"], e["component"]) for e in expected if (e["check"], e["component"]) not in got]
    for host, node in sorted(nodes.items()):
        keyed = {(e["check"], e["component"]) for e in (key.get("hosts") or {}).get(host, [])}
        alarms += [
            (host, f["check"], f["component"], f["severity"])
            for f in node.get("findings", [])
            if f.get("severity") in ("P0", "P1", "P2") and (f["check"], f["component"]) not in keyed
        ]
    cluster_got = {(f.get("check"), f.get("component")) for f in report.get("summary", {}).get("cluster_findings", [])}
    cluster_missing = [
        (c["check"], c["component"]) for c in key.get("cluster", []) if (c["check"], c["component"]) not in cluster_got
    ]
    expected = sum(len(v) for v in (key.get("hosts") or {}).values())
    return {
        "expected": expected,
        "found": expected - len(missing),
        "missing": missing,
        "false_alarms": alarms,
        "cluster_expected": len(key.get("cluster", [])),
        "cluster_found": len(key.get("cluster", [])) - len(cluster_missing),
        "cluster_missing": cluster_missing,
    }


def line(s: dict) -> str:
    return "score: found %d/%d expected findings, %d false alarms (P0-P2 nobody injected); cluster: %d/%d" % (
        s["found"],
        s["expected"],
        len(s["false_alarms"]),
        s["cluster_found"],
        s["cluster_expected"],
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report")
    ap.add_argument("answer_key")
    ap.add_argument("--details", action="store_true", help="list what is missing and every false alarm")
    a = ap.parse_args(argv)
    try:
        with open(a.report, encoding="utf-8") as fh:
            report = json.load(fh)
        with open(a.answer_key, encoding="utf-8") as fh:
            key = json.load(fh)
    except (OSError, ValueError) as exc:
        print("score.py: %s" % exc, file=sys.stderr)
        return 2
    s = score(report, key)
    print(line(s))
    if a.details or s["missing"] or s["false_alarms"] or s["cluster_missing"]:
        for m in s["missing"]:
            print("  missing: %s %s %s" % m)
        for f in s["false_alarms"]:
            print("  false alarm: %s %s %s (%s)" % f)
        for c in s["cluster_missing"]:
            print("  missing cluster finding: %s %s" % c)
    return 0 if not (s["missing"] or s["false_alarms"] or s["cluster_missing"]) else 1


if __name__ == "__main__":
    sys.exit(main())
