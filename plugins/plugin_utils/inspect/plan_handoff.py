# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inspection's plan hands what it read of each captured target to the evaluation (issue 17).

The plan task (``inspect_cluster validate_only``) and the evaluation task each read every target's variables.
ansible-core merges a host's variables anew for each task (vars plugins, group variables: ~0.3 ms a host), so at
10,000 targets the second read cost ~3 s of every run. The plan now writes what it read of the targets analysed
from a capture directory (their pipeline entries, every target's profile, the platform hosts) to
``<state_dir>/cache/plan/<token>.json`` (0600, in a 0700 directory, written atomically) and returns the token; the
evaluation of the same run reads the file once, deletes it, and reads host variables only for the live targets
(whose collection it needs) and the platform hosts.

The evaluation falls back to reading every host's variables, as before, whenever the handoff is not exactly this
run's: no state directory, check mode, a sliced run, a token that is not 32 hex digits, a missing, unreadable,
foreign or malformed file, or targets that differ from the plan's. Values that JSON would not give back equal
(a set, a date) are never handed off: the plan then writes no file. The file is a cache of the plan's own
reading, never outside input: nothing in it is templated. Files older than a day (a run that stopped between
its plan and its evaluation) are removed by the next plan.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils._files import write_private_atomic

SCHEMA = "gpuops.inspect-plan/v1"
_TOKEN = re.compile(r"[0-9a-f]{32}")
#: a plan file older than this was left by a run that stopped before its evaluation
MAX_AGE_S = 86400
#: the plan files: one JSON document each, a few MB at 10,000 targets
MAX_BYTES = 256 << 20


def _dir(state_dir: str) -> str:
    return os.path.join(state_dir, "cache", "plan")


def write(
    state_dir: str,
    targets: List[str],
    profiles: Dict[str, Any],
    without_class: List[str],
    captured: Dict[str, Dict[str, Any]],
    platform: Dict[str, Any],
) -> Optional[str]:
    """Write the plan of this run; its token, or None when nothing was written (not JSON-exact, or an OS error:
    the evaluation then reads the host variables itself)."""
    token = uuid.uuid4().hex
    doc = {
        "schema": SCHEMA,
        "token": token,
        "targets": list(targets),
        "profiles": profiles,
        "without_class": list(without_class),
        "captured": captured,
        "platform": platform,
    }
    try:
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        if json.loads(text) != doc:
            return None  # a value JSON does not give back equal
    except (TypeError, ValueError):
        return None
    prune(state_dir)
    try:
        write_private_atomic(os.path.join(_dir(state_dir), token + ".json"), text, sync_dir=False)
    except OSError:
        return None
    return token


def read(state_dir: str, token: Any, targets: List[str]) -> Optional[Dict[str, Any]]:
    """The plan this run's plan task wrote (``profiles``, ``without_class``, ``captured``, ``platform``: the
    platform hosts), removed once read; None when it is not exactly this run's (see the module's doc)."""
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        return None
    path = os.path.join(_dir(state_dir), token + ".json")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    if len(data) > MAX_BYTES:
        return None
    try:
        doc = _safejson.loads(data, max_bytes=MAX_BYTES, what="plan hand-off")
    except ValueError:  # not UTF-8, not JSON, nested too deep
        return None
    if (
        not isinstance(doc, dict)
        or doc.get("schema") != SCHEMA
        or doc.get("token") != token
        or doc.get("targets") != list(targets)
        or not isinstance(doc.get("profiles"), dict)
        or set(doc["profiles"]) != set(targets)
        or not isinstance(doc.get("without_class"), list)
        or not isinstance(doc.get("captured"), dict)
        or not set(doc["captured"]) <= set(targets)
        or not all(isinstance(e, dict) and e.get("capture_dir") for e in doc["captured"].values())
        or not isinstance(doc.get("platform"), dict)
        or not isinstance(doc["platform"].get("hosts"), list)
    ):
        return None
    return {k: doc[k] for k in ("profiles", "without_class", "captured", "platform")}


def prune(state_dir: str, now: Optional[float] = None) -> int:
    """Remove plan files older than :data:`MAX_AGE_S`; how many were removed."""
    now = time.time() if now is None else now
    removed = 0
    try:
        entries = list(os.scandir(_dir(state_dir)))
    except OSError:
        return 0
    for entry in entries:
        try:
            if entry.name.endswith(".json") and now - entry.stat(follow_symlinks=False).st_mtime > MAX_AGE_S:
                os.unlink(entry.path)
                removed += 1
        except OSError:
            pass
    return removed
