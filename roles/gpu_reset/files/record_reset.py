# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Record successful GPU resets in the controller state directory (``_state.record_gpu_reset_file``), so the
policy's clear rules (``needs_reset_record``) see them. stdin: {state_dir, host, time, gpus: [{bus_id, serial}]}."""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    root = os.path.abspath(__file__)
    for _level in range(7):
        root = os.path.dirname(root)
    sys.path.insert(0, root)
    from ansible_collections.gpuops.cluster.plugins.plugin_utils._state import StateError, record_gpu_reset_file

    try:
        p = json.loads(sys.stdin.read())
        for g in p["gpus"]:
            record_gpu_reset_file(p["state_dir"], p["host"], g["bus_id"], g.get("serial"), p["time"])
    except (StateError, ValueError, KeyError, TypeError, OSError) as exc:
        print(json.dumps({"failed": True, "msg": "cannot record the reset: %s" % exc}))
        return 1
    print(json.dumps({"recorded": len(p["gpus"])}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
