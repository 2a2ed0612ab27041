# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Configuration backups (docs/backup.md): ``backup.failed`` and ``backup.stale`` from ``facts["backup"]``.

The inspection adds ``facts["backup"]`` (:func:`with_backup_status`) when the controller's backup store
``<state_dir>/backups`` exists: the node's newest verified snapshot, its age, and the last recorded failure
(``status/<node>.json``, written by ``gpuops.cluster.backup``). A node without the key is not checked.
"""

from __future__ import annotations

import os
from typing import Any, Dict

from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import parse_time, utcnow
from ansible_collections.gpuops.cluster.plugins.plugin_utils.backup import store as _backup
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import Ctx, as_dict


def _stale_hours(policy: Dict[str, Any]) -> float:
    return float(as_dict(policy.get("backup")).get("stale_hours", 168))


def with_backup_status(facts: Any, state_dir: Any, host: str, policy: Dict[str, Any], now: Any) -> Any:
    """``facts`` plus ``backup`` (``_backup.status`` of this node) when ``<state_dir>/backups`` exists."""
    if not state_dir or not isinstance(facts, dict) or facts.get("unreachable"):
        return facts
    bdir = os.path.join(str(state_dir), "backups")
    if not os.path.isdir(bdir):
        return facts
    when = parse_time(now) or utcnow()
    return dict(facts, backup=_backup.status(bdir, [host], _stale_hours(policy), when)[host])


def check_backup(ctx: Ctx, facts: Dict[str, Any]) -> None:
    b = facts.get("backup")
    if not isinstance(b, dict):
        return
    limit = _stale_hours(ctx.policy)
    failed = as_dict(b.get("failed"))
    if failed:
        ctx.add("backup.failed", "P2", "backup", "failed",
                "the last configuration backup failed: %s" % (failed.get("error") or "no detail"), "monitor",
                "backup.failed: a change on this node is refused until a verified snapshot is taken",
                evidence={"time": failed.get("time"), "change_id": failed.get("change_id")})  # fmt: skip
    if b.get("stale"):
        if b.get("last"):
            msg = "no verified configuration snapshot newer than %sh (last %s, %sh old)" % (
                limit,
                b["last"],
                b.get("age_hours"),
            )
        else:
            msg = "no verified configuration snapshot of this node"
        ctx.add("backup.stale", "P3", "backup", "stale", msg, "monitor",
                "policy backup.stale_hours=%s" % limit,
                evidence={"last": b.get("last"), "created": b.get("created"), "age_hours": b.get("age_hours")})  # fmt: skip
