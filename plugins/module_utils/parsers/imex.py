# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# ruff: noqa: UP009, UP031 - the house header and %-formatting (Python 3.8 managed nodes) are intended
"""IMEX (GB200 / NVL72 memory export) daemon and domain state, read the way DCGM's DcgmImexManager reads them.

``nvidia-imex-ctl -q`` prints one word, the daemon state: INITIALIZING, STARTING_AUTH_SERVER, WAITING_FOR_PEERS,
WAITING_FOR_RECOVERY, INIT_GPU, READY, SHUTTING_DOWN, UNAVAILABLE (DCGM_FI_IMEX_DAEMON_STATUS 0-7).
``nvidia-imex-ctl -N -j`` prints JSON; DCGM takes the **last** ``"status":`` of the text (the top-level one, after
the per-node ones): UP, DOWN or DEGRADED (DCGM_FI_IMEX_DOMAIN_STATUS). Output containing ``Failed to read node
configuration file`` means IMEX is not configured on this node. Facts: gpu-knowledge-2026.md 3.4.

Runs on managed nodes (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Optional, Tuple

PARSER = "imex"
DAEMON_STATES = (
    "INITIALIZING",
    "STARTING_AUTH_SERVER",
    "WAITING_FOR_PEERS",
    "WAITING_FOR_RECOVERY",
    "INIT_GPU",
    "READY",
    "SHUTTING_DOWN",
    "UNAVAILABLE",
)
DOMAIN_STATES = ("UP", "DOWN", "DEGRADED")
NOT_CONFIGURED = "Failed to read node configuration file"
_STATUS = re.compile(r'"status"\s*:\s*"([A-Za-z_]{1,40})"')


def empty() -> Dict[str, Any]:
    return {"configured": None, "daemon": None, "domain": None, "error": None}


def _begin(text: Optional[str], out: Optional[Dict[str, Any]]) -> Tuple[Dict[str, Any], bool]:
    """The record to fill (``out`` or a new one) and whether the text is read already: none, or IMEX not configured."""
    res = out if out is not None else empty()
    if text is None:
        return res, True
    if NOT_CONFIGURED in text:
        res["configured"] = False
        return res, True
    return res, False


def parse_daemon(text: Optional[str], out: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """``nvidia-imex-ctl -q`` into ``{configured, daemon, domain, error}`` (``out`` updated when given)."""
    res, done = _begin(text, out)
    if done:
        return res
    words = text.split()
    word = words[-1].strip().upper() if words else ""
    if word in DAEMON_STATES:
        res["configured"] = True
        res["daemon"] = word
    else:
        res["error"] = "nvidia-imex-ctl -q: not a daemon state: %r" % text.strip()[:120]
    return res


def parse_domain(text: Optional[str], out: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """``nvidia-imex-ctl -N -j`` into ``domain`` (UP / DOWN / DEGRADED; anything else: an error, domain None)."""
    res, done = _begin(text, out)
    if done:
        return res
    found = _STATUS.findall(text)
    status = found[-1].upper() if found else None
    if status in DOMAIN_STATES:
        res["domain"] = status
        if res["configured"] is None:
            res["configured"] = True
    elif res["error"] is None:
        res["error"] = "nvidia-imex-ctl -N -j: no domain status (%s)" % (status or 'no "status" key')
    return res
