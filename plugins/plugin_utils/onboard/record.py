# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node onboarding records: ``<state_dir>/onboarding/<host>.json`` keeps each stage's verdict, so a rerun resumes
after the last passed stage (docs/onboarding.md)."""

from __future__ import annotations

import copy
import os
from typing import Any, Dict, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils import _timeutil
from ansible_collections.gpuops.cluster.plugins.plugin_utils.onboard.checks import _d, _l
from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson

SCHEMA = "gpuops.onboarding/v1"
STAGES = ("inventory", "compliance", "health", "burnin", "baseline", "service")


def now_iso(now: Any = None) -> str:
    """``now`` when given as text (tests, replays), else the current UTC time as ``_timeutil`` writes it."""
    if isinstance(now, str) and now:
        return now
    return _timeutil.utcnow_iso()


def new_record(host: str, node_class: Optional[str] = None) -> Dict[str, Any]:
    return {
        "schema": SCHEMA,
        "host": host,
        "node_class": node_class,
        "status": "new",
        "stages": {},
        "history": [],
        "started_at": None,
        "accepted_at": None,
        "updated_at": None,
    }


def record_path(state_dir: str, host: str) -> str:
    return os.path.join(state_dir, "onboarding", "%s.json" % host)


def baseline_path(state_dir: str, host: str) -> str:
    return os.path.join(state_dir, "baselines", "%s.json" % host)


def load_record(state_dir: str, host: str) -> Dict[str, Any]:
    """The node's onboarding record, or a new one. A corrupt file raises ValueError (never silently restarts)."""
    path = record_path(state_dir, host)
    try:
        with open(path, encoding="utf-8") as fh:
            data = _safejson.loads(fh.read(), what="the onboarding record")
    except FileNotFoundError:
        return new_record(host)
    except (OSError, ValueError) as exc:
        raise ValueError("onboarding record %s is unreadable: %s" % (path, exc)) from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ValueError("onboarding record %s is not a %s document" % (path, SCHEMA))
    rec = new_record(host)
    rec.update(data)
    return rec


def resume_from(record: Any) -> int:
    """Index in STAGES of the first stage not passed (len(STAGES): every stage passed)."""
    stages = _d(_d(record).get("stages"))
    for i, name in enumerate(STAGES):
        if _d(stages.get(name)).get("status") != "passed":
            return i
    return len(STAGES)


def record_stage(
    record: Any, result: Dict[str, Any], by: Optional[str] = None, now: Any = None, ticket: Optional[str] = None
) -> Dict[str, Any]:
    """A copy of ``record`` with the stage verdict recorded (status passed/failed, attempt, who, when).
    A failure invalidates the later stages' earlier passes (they must run again after it)."""
    rec = copy.deepcopy(_d(record))
    stages = rec.setdefault("stages", {})
    name = result["stage"]
    if name not in STAGES:
        raise ValueError("unknown onboarding stage %r (known: %s)" % (name, ", ".join(STAGES)))
    when = now_iso(now)
    prev = _d(stages.get(name))
    entry = {
        "status": "passed" if result.get("passed") else "failed",
        "attempt": int(prev.get("attempt") or 0) + 1,
        "at": when,
        "by": by,
        "ticket": ticket,
        "problems": list(result.get("problems") or []),
        "evidence": result.get("evidence") or {},
        "remedy": result.get("remedy"),
    }
    stages[name] = entry
    if not result.get("passed"):
        for later in STAGES[STAGES.index(name) + 1 :]:
            if _d(stages.get(later)).get("status") == "passed":
                stages[later] = dict(stages[later], status="stale")
    rec.setdefault("history", []).append(
        {"stage": name, "status": entry["status"], "at": when, "by": by, "problems": entry["problems"][:10]}
    )
    rec["history"] = rec["history"][-100:]
    rec["started_at"] = rec.get("started_at") or when
    rec["updated_at"] = when
    if ticket:
        rec["ticket"] = ticket
    if not result.get("passed"):
        rec["status"] = "failed"
        rec["failed_stage"] = name
        rec["reason"] = "onboarding %s failed: %s" % (name, "; ".join(entry["problems"])[:400])
    elif resume_from(rec) == len(STAGES):
        rec["status"] = "accepted"
        rec["accepted_at"] = when
        rec["failed_stage"] = None
        rec["reason"] = None
    else:
        rec["status"] = "in_progress"
        rec["failed_stage"] = None
        rec["reason"] = None
    return rec


def drain_reason(record: Any, max_len: int = 200) -> str:
    """A one-line Slurm reason: the failed stage and its first problems (Slurm reasons are short)."""
    rec = _d(record)
    stage = rec.get("failed_stage") or "?"
    probs = _l(_d(_d(rec.get("stages")).get(stage)).get("problems"))
    text = "onboard %s failed: %s" % (stage, "; ".join(str(p) for p in probs) or "no detail")
    text = text.replace("\n", " ")
    return text if len(text) <= max_len else text[: max_len - 3] + "..."
