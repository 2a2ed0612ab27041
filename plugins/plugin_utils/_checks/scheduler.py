# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scheduler check: this node's Slurm state."""

from __future__ import annotations

from typing import Any, Dict

from ansible_collections.gpuops.cluster.plugins.plugin_utils._checks.context import (
    Ctx,
    as_list,
    slurm_node,
)


def check_scheduler(ctx: Ctx, facts: Dict[str, Any]) -> None:
    n = slurm_node(facts, ctx.host)
    if not n:
        return
    flags = {str(f).upper() for f in as_list(n.get("flags"))}
    base = str(n.get("base_state") or "").upper()
    words = flags | {base} | set(str(n.get("state") or "").upper().replace("*", "+NOT_RESPONDING").split("+"))
    reason = n.get("reason") or ""
    ev = {"state": n.get("state"), "reason": reason, "reason_time": n.get("reason_time")}
    if words & {"DOWN", "NOT_RESPONDING", "FAIL", "FAILING", "NO_RESPOND"}:
        ctx.add(
            "scheduler.node_state",
            "P1",
            "slurm",
            "DOWN",
            "Slurm: %s (%s)" % (n.get("state"), reason or "no reason"),
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
            "Slurm: %s, reason: %s%s"
            % (n.get("state"), reason or "none given", " (drained by gpuops)" if ours else ""),
            "none" if ours else "monitor",
            "scheduler.node_state: drained by %s"
            % ("gpuops" if ours else "someone else (reason owner: %s)" % (n.get("reason_user") or "unknown")),
            evidence=ev,
        )
