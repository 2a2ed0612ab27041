# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scheduler check: this node's Slurm state."""

from __future__ import annotations

from typing import Any, Dict

from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import (
    Ctx,
    as_list,
    slurm_node,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform.slurm_reasons import interpret_reason


def check_scheduler(ctx: Ctx, facts: Dict[str, Any]) -> None:
    n = slurm_node(facts, ctx.host)
    if not n:
        return
    flags = {str(f).upper() for f in as_list(n.get("flags"))}
    base = str(n.get("base_state") or "").upper()
    words = flags | {base} | set(str(n.get("state") or "").upper().replace("*", "+NOT_RESPONDING").split("+"))
    reason = n.get("reason") or ""
    ev = {"state": n.get("state"), "reason": reason, "reason_time": n.get("reason_time")}
    meaning = interpret_reason(reason)
    if meaning:
        ev["reason_meaning"] = meaning
    if n.get("name") not in (None, ctx.host, str(ctx.host).split(".", maxsplit=1)[0]):
        ev["slurm_node_name"] = n.get("name")  # a capture's single record, taken as this host's (docs/capture.md)
    note = _note(meaning, ev.get("slurm_node_name"))
    if words & {"DOWN", "NOT_RESPONDING", "FAIL", "FAILING", "NO_RESPOND"}:
        ctx.add(
            "scheduler.node_state",
            "P1",
            "slurm",
            "DOWN",
            "Slurm: %s (%s)%s" % (n.get("state"), reason or "no reason", note),
            "monitor",
            "scheduler.node_state: DOWN / not responding = node down",
            evidence=ev,
        )
    elif words & {"DRAIN", "DRAINED", "DRAINING"}:
        ours = str(reason).startswith("gpuops")
        # a drained node is already out of service and a human (or we) knows why: advice, not an alarm
        ctx.add(
            "scheduler.node_state",
            "P3",
            "slurm",
            "DRAIN",
            "Slurm: %s, reason: %s%s%s"
            % (n.get("state"), reason or "none given", " (drained by gpuops)" if ours else "", note),
            "none" if ours else "monitor",
            "scheduler.node_state: drained by %s"
            % ("gpuops" if ours else "someone else (reason owner: %s)" % (n.get("reason_user") or "unknown")),
            evidence=ev,
        )


def _note(meaning: Any, name: Any) -> str:
    """The message tail: what the reason means and what to do (``_slurm_reasons``), and the record's NodeName
    when it is not the host's."""
    out = ""
    if isinstance(meaning, dict):
        out += " - cause: %s; next: %s" % (meaning["cause"], meaning["next_step"])
    if name:
        out += " (Slurm record NodeName=%s)" % name
    return out
