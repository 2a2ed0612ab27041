# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rolling upgrade's run report (controller side): ``<run_dir>/report.json`` and ``report.md``.

``build_report`` turns the per-node records the upgrade role writes (``<run_dir>/nodes/<host>.json``) and the
plan into the report; ``render_markdown``/``render_json`` write it; ``read_records`` reads a run directory and
``write`` puts both files in place (0600, atomic, never through a link). gpuops.cluster.upgrade_report is the step.
"""

from __future__ import annotations

import glob
import json
import os
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._files import ensure_private_dir, write_private_atomic
from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson


RESULT_ORDER = ("failed", "not_started", "upgraded", "at_target", "blocked")


def _fmt_version(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, dict):
        return ", ".join("%s %s" % (k, _fmt_version(x)) for k, x in sorted(v.items()))
    if isinstance(v, list):
        uniq = sorted({str(x) for x in v})
        return "/".join(uniq) if uniq else "-"
    return str(v)


def _list(v: Any) -> List[Any]:
    return v if isinstance(v, list) else []


def _dict(v: Any) -> Optional[Dict[str, Any]]:
    return v if isinstance(v, dict) else None


def node_rows(record: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One row per planned component of a node record: component, from, to, result, duration."""
    rows = []
    applied = {a.get("component"): a for a in _list(record.get("applied")) if isinstance(a, dict)}
    for step in _list(record.get("steps")):
        if not isinstance(step, dict):
            continue
        comp = step.get("component")
        a = applied.get(comp)
        rows.append(
            {
                "component": comp,
                "from": step.get("from"),
                "to": step.get("to"),
                "applied": a is not None,
                "seconds": a.get("seconds") if a else None,
            }
        )
    return rows


def build_report(
    change_id: str,
    records: List[Dict[str, Any]],
    planned: Optional[List[str]] = None,
    blocked: Optional[List[Dict[str, Any]]] = None,
    deferred: Optional[List[Dict[str, Any]]] = None,
    batches: Optional[List[Dict[str, Any]]] = None,
    generated_at: str = "",
) -> Dict[str, Any]:
    """The run report: per node from/to versions, result, duration; planned nodes without a record are
    ``not_started`` (the window closed, or the rollout stopped before their batch: ``mark_stopped``)."""
    by_host: Dict[str, Dict[str, Any]] = {}
    for rec in records:
        if isinstance(rec, dict) and isinstance(rec.get("host"), str):
            by_host[rec["host"]] = rec
    nodes = []
    for host in sorted(by_host):
        rec = by_host[host]
        dur = rec.get("duration_s")
        try:
            dur = round(float(dur), 1) if dur is not None else None
        except (TypeError, ValueError):
            dur = None
        nodes.append(
            {
                "host": host,
                "batch": rec.get("batch"),
                "result": str(rec.get("result") or "unknown"),
                "stage": rec.get("stage"),
                "message": rec.get("message"),
                "duration_s": dur,
                "components": node_rows(rec),
                "rollback": _dict(rec.get("rollback")),
                "evidence": rec.get("evidence"),
                "slurm": _dict(rec.get("slurm")),
                "backup": _dict(rec.get("backup")) or None,
            }
        )
    for host in _list(planned):
        if isinstance(host, str) and host not in by_host:
            nodes.append({"host": host, "batch": None, "result": "not_started", "stage": None,
                          "message": "not started (window closed or rollout stopped)", "duration_s": None,
                          "components": [], "rollback": None, "evidence": None, "slurm": None})  # fmt: skip
    for b in _list(blocked):
        if isinstance(b, dict) and b.get("host") not in by_host:
            nodes.append({"host": b.get("host"), "batch": None, "result": "blocked", "stage": None,
                          "message": b.get("reason"), "duration_s": None, "components": [], "rollback": None,
                          "evidence": None, "slurm": None})  # fmt: skip
    counts: Dict[str, int] = {}
    for n in nodes:
        counts[n["result"]] = counts.get(n["result"], 0) + 1
    return {
        "change_id": change_id,
        "generated_at": generated_at,
        "counts": counts,
        "ok": not any(n["result"] in ("failed", "not_started", "unknown") for n in nodes),
        "stopped": None,
        "batches": _list(batches),
        "deferred": _list(deferred),
        "nodes": nodes,
    }


def mark_stopped(report: Dict[str, Any], stopped: str) -> Dict[str, Any]:
    """Say why the rollout stopped before its last batch (``stopped``: the window gate's or the batch check's
    words) in the report and in each not-started node's message."""
    if stopped:
        report["stopped"] = stopped
        for n in _list(report.get("nodes")):
            if isinstance(n, dict) and n.get("result") == "not_started":
                n["message"] = "not started: %s" % stopped
    return report


#: Failed stages after which the new firmware/driver may be on the node but is not proven good: the node is
#: deliberately left drained (outcome ``left_drained``); a failure before (drain, apply, activate) is ``failed``.
_UNVERIFIED_STAGES = ("verify", "post_inspection", "resume")


def _failed_outcome(node: Dict[str, Any]) -> str:
    stage = str(node.get("stage") or "")
    if stage in ("health_gate", "backup", "image_digest") or (
        stage == "drain" and "refused by the guard" in str(node.get("message") or "")
    ):
        # the health gate, the backup (no verified snapshot), the image digest or the isolation guard said no
        # before anything changed
        return "refused"
    if str(node.get("evidence") or "").endswith("node unreachable"):
        return "unconfirmed"  # the node did not come back: what it runs now is not known
    return "left_drained" if stage in _UNVERIFIED_STAGES else "failed"


def outcomes(report: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Per-node outcomes (the issue-21 vocabulary, docs/upgrades.md) of a run report, for
    ``gpuops.cluster.run_outcome``: upgraded -> done, at_target -> already, blocked -> refused,
    not_started -> not_started, failed -> refused (health gate) / failed / left_drained / unconfirmed."""
    out: Dict[str, Dict[str, Any]] = {}
    for n in _list(report.get("nodes")):
        if not isinstance(n, dict) or not isinstance(n.get("host"), str):
            continue
        result = str(n.get("result") or "unknown")
        slurm = n.get("slurm") if isinstance(n.get("slurm"), dict) else {}
        entry: Dict[str, Any] = {"detail": str(n.get("message") or result), "decision": result}
        if result == "upgraded":
            entry["outcome"] = "done"
        elif result == "at_target":
            entry["outcome"] = "already"
        elif result == "blocked":
            entry.update(outcome="refused", decision="blocked by the plan")
        elif result == "not_started":
            entry.update(outcome="not_started", decision="stopped: %s" % (report.get("stopped") or "rollout stopped"))
        else:
            entry.update(
                outcome=_failed_outcome(n),
                decision="failed at %s" % (n.get("stage") or "?"),
                error=str(n.get("message") or "") or None,
            )
        snap = n.get("backup") if isinstance(n.get("backup"), dict) else {}
        if snap.get("id"):
            entry["detail"] += "; snapshot %s, restore: %s" % (snap["id"], snap.get("restore_command") or "?")
        if slurm.get("state"):
            entry["slurm_state"] = str(slurm["state"])
        if slurm.get("reason"):
            entry["slurm_reason"] = str(slurm["reason"])
        out[n["host"]] = entry
    return out


def _md_cell(v: Any) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Dict[str, Any]) -> str:
    """The report as Markdown: a summary line, one table row per node component, then failures in detail."""
    lines = ["# Upgrade run %s" % _md_cell(report.get("change_id") or "(no change id)"), ""]
    if report.get("generated_at"):
        lines += ["Generated %s." % report["generated_at"], ""]
    counts = report.get("counts") or {}
    if report.get("stopped"):
        lines += ["Stopped: %s" % _md_cell(report["stopped"]), ""]
    lines.append("Result: **%s** - %s" % (
        "complete" if report.get("ok") else "INCOMPLETE",
        ", ".join("%d %s" % (counts[k], k) for k in sorted(counts, key=lambda k: (RESULT_ORDER + (k,)).index(k)))
        or "no nodes",
    ))  # fmt: skip
    lines += ["", "| node | batch | result | component | from | to | duration (s) |", "|---|---|---|---|---|---|---|"]
    for n in report.get("nodes") or []:
        comps = n.get("components") or [{}]
        for i, c in enumerate(comps):
            lines.append(
                "| %s | %s | %s | %s | %s | %s | %s |"
                % (
                    _md_cell(n.get("host")) if i == 0 else "",
                    _md_cell("-" if n.get("batch") is None else n.get("batch")) if i == 0 else "",
                    _md_cell(n.get("result")) if i == 0 else "",
                    _md_cell(c.get("component") or "-"),
                    _md_cell(_fmt_version(c.get("from"))),
                    _md_cell(_fmt_version(c.get("to"))),
                    _md_cell("-" if n.get("duration_s") is None else n.get("duration_s")) if i == 0 else "",
                )
            )
    bad = [n for n in report.get("nodes") or [] if n.get("result") not in ("upgraded", "at_target")]
    if bad:
        lines += ["", "## Not upgraded", ""]
        for n in bad:
            extra = []
            if n.get("stage"):
                extra.append("stage %s" % n["stage"])
            if n.get("slurm"):
                extra.append("slurm %s" % _fmt_version({k: v for k, v in n["slurm"].items() if v is not None}))
            if n.get("rollback"):
                extra.append("rollback %s" % ("ok" if n["rollback"].get("ok") else "FAILED"))
            if n.get("evidence"):
                extra.append("evidence %s" % n["evidence"])
            lines.append("- **%s** (%s): %s%s" % (_md_cell(n.get("host")), n.get("result"), _md_cell(n.get("message") or ""),
                                                  (" - " + "; ".join(_md_cell(e) for e in extra)) if extra else ""))  # fmt: skip
    for d in report.get("deferred") or []:
        if isinstance(d, dict):
            lines.append("- deferred %s: %s" % (_md_cell(d.get("name")), _md_cell(d.get("reason"))))
    return "\n".join(lines) + "\n"


def render_json(report: Dict[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=True, default=str) + "\n"


def read_records(run_dir: str) -> Tuple[List[Dict[str, Any]], List[str]]:
    """The node records of a run directory (``nodes/*.json``), and the ones that could not be read (path: why)."""
    records, unreadable = [], []
    for path in sorted(glob.glob(os.path.join(run_dir, "nodes", "*.json"))):
        try:
            with open(path, encoding="utf-8") as fh:
                records.append(_safejson.loads(fh.read(), what="the node record"))
        except (OSError, ValueError) as exc:
            unreadable.append("%s: %s" % (path, exc))
    return records, unreadable


def report_paths(run_dir: str) -> Dict[str, str]:
    return {"json": os.path.join(run_dir, "report.json"), "markdown": os.path.join(run_dir, "report.md")}


def rendered(report: Dict[str, Any], run_dir: str) -> List[Tuple[str, str]]:
    """``[(path, text), ...]`` of the report's files."""
    paths = report_paths(run_dir)
    return [(paths["json"], render_json(report)), (paths["markdown"], render_markdown(report))]


def write(files: List[Tuple[str, str]], run_dir: str) -> None:
    """Write the rendered files: a missing ``run_dir`` is created 0700; files 0600, atomic, never through a link."""
    ensure_private_dir(run_dir)
    for path, text in files:
        write_private_atomic(path, text)
