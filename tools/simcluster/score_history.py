#!/usr/bin/env python3
"""Score a service report (gpuops.service_report/v1) against a simulated history's answer key (issue 15).

    python3 tools/simcluster/score_history.py reports/demo-history/service-report.json build/sim-history/answer_key.json

The issue's "done means": cluster availability within 0.05 percentage points of the key, the breached incidents
exactly those of the key (none missing, none extra), the capacity peak equal to 4 decimals. Per-node availability is
shown for information. Exit 0 when all three pass, 1 on a mismatch, 2 on unreadable input. Stdlib only.
"""

from __future__ import annotations

import json
import sys

TOLERANCE_PP = 0.05


class ScoreError(Exception):
    pass


def _load(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ScoreError("%s: cannot read a JSON document: %s" % (path, exc)) from None
    if not isinstance(data, dict):
        raise ScoreError("%s: not a JSON object" % path)
    return data


def _get(doc: dict, dotted: str, where: str):
    cur = doc
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            raise ScoreError("%s has no %s" % (where, dotted))
        cur = cur[part]
    return cur


def _num(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScoreError("%s is not a number (%r)" % (what, value))
    return float(value)


def score(report: dict, key: dict) -> tuple:
    """-> (lines, passed). ``key`` is the answer key (or a history_key.json) holding ``history``."""
    hist = _get(key, "history", "the answer key")
    lines, ok = [], True
    r_av = _num(_get(report, "availability.cluster", "the report"), "report availability.cluster")
    k_av = _num(_get(hist, "availability.cluster", "the key"), "key availability.cluster")
    diff = abs(r_av - k_av)
    good = diff <= TOLERANCE_PP + 1e-9
    ok &= good
    lines.append(
        "availability  report %.3f %%  key %.3f %%  difference %.3f pp  %s (<= %.2f pp)"
        % (r_av, k_av, diff, "PASS" if good else "FAIL", TOLERANCE_PP)
    )
    r_br = _get(report, "sla.breaches", "the report")
    k_br = _get(hist, "sla.breaches", "the key")
    if not isinstance(r_br, list) or not isinstance(k_br, list):
        raise ScoreError("sla.breaches must be a list of incident ids in both documents")
    missing, extra = sorted(set(k_br) - set(r_br)), sorted(set(r_br) - set(k_br))
    good = not missing and not extra
    ok &= good
    lines.append(
        "breaches      report %d  key %d  missing %d  extra %d  %s"
        % (len(r_br), len(k_br), len(missing), len(extra), "PASS" if good else "FAIL")
    )
    for label, ids in (("missing", missing), ("extra", extra)):
        if ids:
            lines.append("  %s: %s" % (label, ", ".join(ids[:20]) + (" ..." if len(ids) > 20 else "")))
    r_cap = _num(_get(report, "capacity.peak_allocated_share", "the report"), "report capacity peak")
    k_cap = _num(_get(hist, "capacity.peak_allocated_share", "the key"), "key capacity peak")
    good = round(r_cap, 4) == round(k_cap, 4)
    ok &= good
    lines.append("capacity peak report %.4f  key %.4f  %s" % (r_cap, k_cap, "PASS" if good else "FAIL"))
    lines.append(_nodes_line(report, hist))
    return lines, ok


def _nodes_line(report: dict, hist: dict) -> str:
    r_nodes = (report.get("availability") or {}).get("nodes") or {}
    k_nodes = (hist.get("availability") or {}).get("nodes") or {}
    diffs = []
    for host, k in k_nodes.items():
        r = r_nodes.get(host)
        if isinstance(r, (int, float)) and isinstance(k, (int, float)):
            diffs.append((abs(r - k), host))
    absent = sorted(h for h in k_nodes if h not in r_nodes)
    if not diffs:
        return "nodes         no per-node figures to compare (info)"
    worst = max(diffs)
    over = sum(1 for d, _h in diffs if d > TOLERANCE_PP + 1e-9)
    return "nodes         %d compared, %d beyond %.2f pp, worst %.3f pp (%s), %d absent from the report (info)" % (
        len(diffs),
        over,
        TOLERANCE_PP,
        worst[0],
        worst[1],
        len(absent),
    )


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: score_history.py SERVICE_REPORT.json ANSWER_KEY.json", file=sys.stderr)
        return 2
    try:
        lines, ok = score(_load(argv[0]), _load(argv[1]))
    except ScoreError as exc:
        print("score_history: %s" % exc, file=sys.stderr)
        return 2
    print("\n".join(lines))
    print("history score: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
