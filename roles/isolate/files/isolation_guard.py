# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side entry of the isolation blast-radius guard (used by the gpuops.cluster.isolate role).

Reads one JSON object on stdin: {nodes, findings, scontrol_show_node, racks, policy, state_dir, override_reason,
run_id, ticket, claim, lock_timeout}; prints the decision of ``_guard.guard_and_claim`` as JSON on stdout
(exit 0), or {"failed": true, "msg": ...} (exit 1). Collection roles cannot ship modules, and the decision
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
    from ansible_collections.gpuops.cluster.plugins.module_utils._guard import (
        GuardError,
        cluster_from_slurm,
        guard_and_claim,
        targets_from_findings,
    )
    from ansible_collections.gpuops.cluster.plugins.module_utils._slurm_parse import parse_show_node
    from ansible_collections.gpuops.cluster.plugins.module_utils._state import StateError

    try:
        p = json.loads(sys.stdin.read())
        cluster = cluster_from_slurm(parse_show_node(p["scontrol_show_node"], "scontrol show node"), p.get("racks"))
        result = guard_and_claim(
            p["state_dir"],
            targets_from_findings(p["nodes"], p.get("findings")),
            cluster,
            policy=p.get("policy") or {},
            override_reason=p.get("override_reason") or "",
            run_id=p.get("run_id") or "",
            ticket=p.get("ticket") or "",
            claim=bool(p.get("claim", True)),
            lock_timeout=float(p.get("lock_timeout", 60)),
        )
    except (GuardError, StateError, ParseError, ValueError, KeyError, TypeError) as exc:
        print(json.dumps({"failed": True, "msg": "isolation guard: %s" % exc}))
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
