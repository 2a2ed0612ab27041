# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an inspection says about its own run (issue 41): progress lines during its long stages, and the age of
each node's evidence (stale evidence flagged; respond-by counted from the evidence time).

Progress: one line when a stage starts and one when it ends, with its node count and seconds, on stderr of the
process that runs the inspection (the controller: ``ansible-playbook``'s terminal), for runs of
:data:`PROGRESS_MIN_HOSTS` nodes or more (a small run ends before anyone waits for it). ``progress=`` of
``pipeline.inspect_nodes`` / ``report_files.write_reports`` takes any callable of one line instead (``False``:
silent).

Evidence age (docs/capture.md "Stale evidence"): a node whose evidence time is older than
:data:`STALE_EVIDENCE_S` (24 h) before the inspection gets ``evidence_age_s`` and ``stale_evidence`` ("stale
evidence (5 d old)") in its report entry, shown under the node in report.md/report.html and counted in
``summary.stale_evidence``. It is a note, not a finding: old evidence says nothing about the node's health now,
and a P3 per node would bury the real findings of an old capture set. Each node finding's ``respond_by`` counts
from the evidence time (the fault was there then), or from when it was first seen when that is earlier.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Dict, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import respond_by
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import parse_time

#: Runs of this many nodes print progress lines by default.
PROGRESS_MIN_HOSTS = 500
#: Evidence older than this (seconds before the inspection's time) is stale.
STALE_EVIDENCE_S = 24 * 3600


def _stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def progress_sink(option: Any, n_nodes: int) -> Optional[Callable[[str], None]]:
    """The callable that prints progress lines: ``option`` when callable, none for ``False`` (or a small run
    when ``option`` is None), else stderr."""
    if callable(option):
        return option
    if option is False or (option is None and n_nodes < PROGRESS_MIN_HOSTS):
        return None
    return _stderr


class Stage:
    """``with Stage(sink, "read", 10000): ...`` prints "gpuops inspect: read: 10000 nodes ..." and, at the end,
    "gpuops inspect: read: 10000 nodes in 12.3 s"."""

    def __init__(self, sink: Optional[Callable[[str], None]], name: str, count: int) -> None:
        self.sink, self.name, self.count, self.t0 = sink, name, count, 0.0

    def __enter__(self) -> Stage:
        self.t0 = time.monotonic()
        if self.sink:
            self.sink("gpuops inspect: %s: %d nodes ..." % (self.name, self.count))
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.sink and exc[0] is None:
            self.sink("gpuops inspect: %s: %d nodes in %.1f s" % (self.name, self.count, time.monotonic() - self.t0))


def age_label(age_s: float) -> str:
    """ "stale evidence (5 d old)": hours under two days, else days."""
    hours = int(age_s // 3600)
    return "stale evidence (%s old)" % ("%d h" % hours if hours < 48 else "%d d" % (hours // 24))


def mark_evidence_age(report: Dict[str, Any], now: Any, policy: Dict[str, Any]) -> None:
    """Each node entry with an ``evidence_time``: ``evidence_age_s``; ``stale_evidence`` when older than
    :data:`STALE_EVIDENCE_S`; its findings' ``respond_by`` from the evidence time when that is earlier.
    ``summary.stale_evidence``: {threshold_s, nodes (count)}."""
    ref = parse_time(now)
    stale = 0
    for n in report["nodes"].values():
        when = parse_time(n.get("evidence_time")) if n.get("evidence_time") else None
        if when is None or ref is None:
            continue
        age = (ref - when).total_seconds()
        n["evidence_age_s"] = int(age)
        if age > STALE_EVIDENCE_S:
            n["stale_evidence"] = age_label(age)
            stale += 1
        if age <= 0:
            continue
        for f in n.get("findings") or []:
            if not f.get("severity"):
                continue
            earlier = respond_by(f["severity"], when, policy)
            current = parse_time(f.get("respond_by")) if f.get("respond_by") else None
            if earlier and (current is None or parse_time(earlier) < current):
                f["respond_by"] = earlier
    report["summary"]["stale_evidence"] = {"threshold_s": STALE_EVIDENCE_S, "nodes": stale}
