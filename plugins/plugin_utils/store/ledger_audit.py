# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit trail into the ledger (docs/service.md): each workflow outcome becomes a ``changes`` row.

:func:`ingest_audit` reads the hash-chained audit log (``_audit``) and loads its ``outcome`` records (isolate,
resume, gpu_reset, upgrade, replace, leak_response ...: one per node, written by ``gpuops.cluster.outcome``).
A record's digest is its line hash, unique in ``changes``: each record loads once however often the log is read.
The roles move incident clocks through these records: an isolation that took effect sets ``mitigated`` on the
node's open incidents, a replace or GPU reset that brought the node back sets ``restored``.
"""

from __future__ import annotations

import datetime
import os
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import audit as _audit
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store.ledger_incidents import LOCK, tables

try:
    import sqlalchemy as sa
except ImportError:  # sanity import test
    sa = None

#: workflow -> the incident clock its successful outcome moves on the node's open incidents
CLOCK_OF = {
    "isolate": ("mitigated_at", "mitigated"),
    "replace": ("restored_at", "restored"),
    "gpu_reset": ("restored_at", "restored"),
}
_DONE = ("done", "already")


def _time(text: Any) -> Optional[float]:
    if not isinstance(text, str):
        return None
    try:
        when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.timestamp()


def _s(value: Any, size: int) -> Optional[str]:
    return str(value)[:size] if value not in (None, "") else None


def read_changes(log_path: str) -> List[Dict[str, Any]]:
    """The ``changes`` rows of every outcome record of the log (missing log: none; a damaged line is skipped,
    ``gpuops.cluster.audit_verify`` is what reports it)."""
    if not os.path.exists(log_path):
        return []
    rows = []
    with open(log_path, "rb") as f:
        for raw in f:
            raw = raw.rstrip(b"\n")
            if not raw or len(raw) > _audit.MAX_LINE:
                continue
            try:
                rec = _safejson.loads(raw, what="audit log line")
            except (ValueError, UnicodeDecodeError):
                continue
            at = _time(rec.get("time")) if isinstance(rec, dict) else None
            if not isinstance(rec, dict) or rec.get("event") != "outcome" or at is None or not rec.get("workflow"):
                continue
            rows.append(
                {
                    "digest": _audit.line_hash(raw),
                    "at": at,
                    "action": str(rec["workflow"])[:32],
                    "host": _s(rec.get("node") or rec.get("host"), 255),
                    "ticket": _s(rec.get("ticket"), 128),
                    "actor": _s(rec.get("user"), 255),
                    "outcome": _s(rec.get("outcome"), 32),
                    "detail": {
                        k: rec.get(k)
                        for k in (
                            "seq",
                            "run_id",
                            "workflow_run_id",
                            "decision",
                            "detail",
                            "error",
                            "slurm_state",
                            "change_id",
                        )
                        if rec.get(k) is not None
                    },
                }
            )
    return rows


def _move_clocks(conn: Any, rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Set mitigated/restored on the open incidents of each changed node (the step not yet set, detected before)."""
    t = tables()
    inc = t["incidents"]
    moved = []
    for row in sorted(rows, key=lambda r: r["at"]):
        clock = CLOCK_OF.get(row["action"])
        if not clock or row["outcome"] not in _DONE or not row["host"]:
            continue
        column, word = clock
        q = sa.select(inc.c.incident_id).where(
            inc.c.state == "open", inc.c.host == row["host"], inc.c[column].is_(None), inc.c.detected_at <= row["at"]
        )
        for (iid,) in conn.execute(q).all():
            conn.execute(inc.update().where(inc.c.incident_id == iid).values(**{column: row["at"]}))
            conn.execute(
                t["incident_events"].insert(),
                {
                    "incident_id": iid,
                    "step": word,
                    "at": row["at"],
                    "actor": row["actor"] or row["action"],
                    "source": "role",
                    "detail": "%s %s (audit %s)" % (row["action"], row["outcome"], row["digest"][:12]),
                },
            )
            moved.append({"incident_id": iid, "step": word, "action": row["action"]})
    return moved


def ingest_audit(store: Any, log_path: str) -> Dict[str, Any]:
    """Load the audit log's new outcome records into ``changes`` (one transaction, lock ``ledger``) and move
    the clocks they imply. Returns {loaded, moved}."""
    rows = read_changes(log_path)
    if not rows:
        return {"loaded": 0, "moved": []}
    ch = tables()["changes"]
    with store.begin(lock=LOCK) as conn:
        known = set()
        digests = [r["digest"] for r in rows]
        for i in range(0, len(digests), 2000):
            known.update(
                d for (d,) in conn.execute(sa.select(ch.c.digest).where(ch.c.digest.in_(digests[i : i + 2000])))
            )
        new = [r for r in rows if r["digest"] not in known]
        if new:
            conn.execute(ch.insert(), new)
        moved = _move_clocks(conn, new)
    return {"loaded": len(new), "moved": moved}
