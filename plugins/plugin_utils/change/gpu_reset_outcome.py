# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a GPU reset rollout did, node by node: the logic of the action ``gpuops.cluster.gpu_reset_outcome``.

- :func:`outcome` - each requested node's ``gpu_reset_result`` (and the error the playbook's ``rescue:`` kept)
  to its outcome in the ``gpuops.outcome/v1`` vocabulary (change/outcome.py, docs/operations.md);
- :func:`error_text` - a failed looped ``nvidia-smi -r``: each failed item's own output, not Ansible's
  "One or more items failed".

No Ansible imports.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils.change.isolate_outcome import truncate


#: gpu_reset_result.outcome -> (outcome, detail) where the node's own msg is the error
_FIXED = {
    "refused_process_attached": ("refused", "GPU reset refused: compute process attached"),
    "unreachable": ("refused", "node unreachable"),
    "not_isolated": ("failed", "not drained"),
    "left_drained": ("left_drained", "GPU reset failed, node left drained"),
}


def _one(r: Dict[str, Any], err: Optional[str], resume: bool) -> Dict[str, Any]:
    o = r.get("outcome") or ""
    if o == "":
        return {"outcome": "not_started", "detail": "the rollout stopped before this node"}
    if o == "nothing_to_do":
        return {"outcome": "skipped", "detail": "no GPU needed a reset"}
    if o in ("reset", "rebooted"):
        if r.get("resumed") or not resume:
            detail = "GPU %s reset" % ",".join(str(g) for g in r.get("gpus") or [])
            detail += (" after a reboot" if o == "rebooted" else "") + (", back in service" if r.get("resumed") else "")
            return {"outcome": "done", "detail": detail}
        return {"outcome": "left_drained", "detail": "GPU reset done, not resumed", "error": r.get("msg")}
    if o == "not_isolated" and r.get("refused_by_guard"):
        return {"outcome": "refused", "detail": "not drained: refused by the blast-radius guard", "error": r.get("msg")}
    if o in _FIXED:
        return {"outcome": _FIXED[o][0], "detail": _FIXED[o][1], "error": r.get("msg")}
    return {"outcome": "unconfirmed", "detail": "the run stopped during the reset (%s)" % o, "error": err}


def outcome(
    nodes: List[str], results: Dict[str, Any], errors: Dict[str, Any], resume: bool = True
) -> Dict[str, Dict[str, Any]]:
    """node -> outcome; ``results`` node -> gpu_reset_result (missing: not started), ``errors`` node -> the
    error the rescue kept."""
    out = {}
    for n in nodes:
        r = results.get(n) if isinstance(results.get(n), dict) else {}
        entry = _one(r, errors.get(n), resume)
        entry.update(slurm_state=r.get("slurm_state"), slurm_reason=r.get("slurm_reason_set"))
        out[n] = entry
    return out


def error_text(failed_result: Any) -> str:
    """Each failed loop item's stderr and stdout (whitespace folded), else its msg; else the task's msg."""
    res = failed_result if isinstance(failed_result, dict) else {}
    texts = []
    for r in res.get("results") or []:
        if isinstance(r, dict) and r.get("failed"):
            text = re.sub(r"\s+", " ", "%s %s" % (r.get("stderr") or "", r.get("stdout") or "")).strip()
            texts.append(text or str(r.get("msg") or "failed"))
    return truncate("; ".join(texts) or str(res.get("msg") or "reset failed"))
