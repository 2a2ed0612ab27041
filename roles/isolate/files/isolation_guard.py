# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side entry of the isolation blast-radius guard (used by the gpuops.cluster.isolate role).

Reads one JSON object on stdin and prints the answer as JSON on stdout (exit 0), or {"failed": true, "msg": ...}
(exit 1; bad guard settings are refused here with the offending key named):

- ``{"action": "claim" (default), nodes, findings, scontrol_show_node, racks, policy, state_dir,
  override_reason, run_id, ticket, claim, lock_timeout}``: the decision of ``_guard.guard_and_claim``; the allowed
  nodes are claimed for ``run_id`` under the guard lock.
- ``{"action": "release", state_dir, run_id, done: [nodes], failed: [nodes], lock_timeout}``: the result of
  ``_guard.release_claims`` (``done``: the drain went through; ``failed``: it did not, the claim stops counting).
  Collection roles cannot ship modules, and the decision
must run on the controller next to the state directory, so the role runs this with ansible_playbook_python.
"""

from __future__ import annotations

import json
import os
import sys


def _import_path() -> None:
    # <root>/ansible_collections/gpuops/cluster/roles/isolate/files/isolation_guard.py
    here = os.path.abspath(__file__)
    root = here
    for _level in range(7):
        root = os.path.dirname(root)
    if root not in sys.path:
        sys.path.insert(0, root)


def main() -> int:
    _import_path()
    from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
    from ansible_collections.gpuops.cluster.plugins.plugin_utils._guard import (
        GuardError,
        cluster_from_slurm,
        guard_and_claim,
        release_claims,
        targets_from_findings,
    )
    from ansible_collections.gpuops.cluster.plugins.module_utils._slurm_parse import parse_show_node
    from ansible_collections.gpuops.cluster.plugins.plugin_utils._state import StateError

    try:
        p = json.loads(sys.stdin.read())
        if not isinstance(p, dict):
            raise GuardError("the request must be a JSON object")
        action = p.get("action") or "claim"
        lock_timeout = float(p.get("lock_timeout", 60))
        if action == "release":
            outcomes = {}
            for key in ("done", "failed"):
                nodes = p.get(key) or []
                if not isinstance(nodes, list):
                    raise GuardError("%s must be a list of node names" % key)
                for node in nodes:
                    outcomes[node] = key
            result = release_claims(p["state_dir"], p.get("run_id") or "", outcomes, lock_timeout=lock_timeout)
        elif action == "claim":
            cluster = cluster_from_slurm(parse_show_node(p["scontrol_show_node"], "scontrol show node"), p.get("racks"))
            result = guard_and_claim(
                p["state_dir"],
                targets_from_findings(p["nodes"], p.get("findings")),
                cluster,
                policy=p.get("policy") or {},
                override_reason=p.get("override_reason") or "",
                run_id=p.get("run_id") or "",
                ticket=p.get("ticket") or "",
                claim=not (p.get("claim") is False or str(p.get("claim")).lower() == "false"),  # check mode only
                lock_timeout=lock_timeout,
            )
        else:
            raise GuardError("unknown action %r (claim or release)" % (action,))
    except (GuardError, StateError, ParseError, ValueError, KeyError, TypeError, OSError) as exc:
        print(json.dumps({"failed": True, "msg": "isolation guard: %s" % exc}))
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
