# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers of the ``node`` domain (docs/facts.md): os-release, meminfo, the mount table, ``stat -f``, fabric
manager and package versions, ``systemctl is-active`` and ``systemctl show``, ``/proc/<pid>/status``. ``_node``
re-exports their names.

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    MAX_LINE_CHARS,
    ParseError,
    to_int,
)

#: Bounded repeats: a 100,000-digit line must not cost a quadratic search.
_VERSION_RE = re.compile(r"([0-9]{1,9}\.[0-9]{1,9}(?:\.[0-9]{1,9}){0,6})")
_OCTAL_RE = re.compile(r"\\([0-7]{3})")


# ---------------------------------------------------------------------------------------------------------------
# Parsers (pure)
# ---------------------------------------------------------------------------------------------------------------


def parse_os_release(text: str) -> Dict[str, str]:
    """``/etc/os-release`` (``KEY=value``, values optionally quoted) -> dict. Other lines are skipped."""
    out: Dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _sep, value = line.partition("=")
        key = key.strip()
        if not re.match(r"^[A-Z][A-Z0-9_]*$", key):
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[key] = re.sub(r"\\(.)", r"\1", value)
    return out


def os_name(release: Dict[str, str]) -> Optional[str]:
    """PRETTY_NAME, else NAME + VERSION, else None."""
    if release.get("PRETTY_NAME"):
        return release["PRETTY_NAME"]
    name = " ".join(v for v in (release.get("NAME"), release.get("VERSION")) if v)
    return name or None


def parse_meminfo(text: str) -> Optional[int]:
    """MemTotal of ``/proc/meminfo`` in MiB, or None."""
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            kb = to_int(line.split(":", 1)[1])
            return kb // 1024 if kb is not None else None
    return None


def _unescape(field: str) -> str:
    return _OCTAL_RE.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_mounts(text: str) -> List[Dict[str, str]]:
    """``/proc/self/mounts`` -> ``[{device, path, fstype, options}]`` in table order (octal escapes decoded)."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4 or not parts[1].startswith("/"):
            continue
        out.append(
            {"device": _unescape(parts[0]), "path": _unescape(parts[1]), "fstype": parts[2], "options": parts[3]}
        )
    return out


def mount_of(table: List[Dict[str, str]], path: str) -> Optional[Dict[str, str]]:
    """The mount entry whose target is exactly ``path`` (the last one: later mounts cover earlier ones)."""
    want = os.path.normpath(path)
    found = None
    for entry in table:
        if os.path.normpath(entry["path"]) == want:
            found = entry
    return found


def mount_containing(table: List[Dict[str, str]], path: str) -> Optional[Dict[str, str]]:
    """The mount entry holding ``path`` (longest matching target, last wins)."""
    want = os.path.normpath(path)
    best = None
    best_len = -1
    for entry in table:
        target = os.path.normpath(entry["path"])
        if want == target or want.startswith(target.rstrip("/") + "/"):
            if len(target) >= best_len:
                best, best_len = entry, len(target)
    return best


def parse_stat_f(text: str, source: Optional[str] = None) -> Dict[str, Any]:
    """Output of ``stat -f -c '%b %f %a %S'`` -> ``{size_mib, free_mib, free_pct}``. Raises ParseError."""
    fields = text.split()
    nums = [to_int(f) for f in fields[:4]]
    if len(fields) < 4 or any(n is None or n < 0 for n in nums):
        raise ParseError(f"expected 4 numbers, got {text[:100]!r}", "stat_f", source, 1)
    blocks, _bfree, bavail, frsize = nums
    mib = 1024 * 1024
    return {
        "size_mib": blocks * frsize // mib,
        "free_mib": bavail * frsize // mib,
        "free_pct": round(100.0 * bavail / blocks, 1) if blocks else None,
    }


def parse_fm_version(text: str) -> Optional[str]:
    """``nv-fabricmanager --version``: ``Fabric Manager version is : 535.161.08`` -> ``535.161.08``."""
    for line in text.splitlines():
        if "version" in line.lower() and len(line) <= MAX_LINE_CHARS:
            m = _VERSION_RE.search(line.split(":", 1)[-1])
            if m:
                return m.group(1)
    return None


def _upstream(version: str) -> Optional[str]:
    """Debian/RPM version ``1:535.161.08-1`` -> ``535.161.08``."""
    v = version.split(":", 1)[-1].split("-", 1)[0]
    m = _VERSION_RE.match(v)
    return m.group(1) if m else None


def parse_dpkg_versions(text: str) -> Optional[str]:
    """``dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\\n'`` -> version of an installed package."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].startswith("ii"):
            v = _upstream(parts[-1])
            if v:
                return v
    return None


def parse_rpm_versions(text: str) -> Optional[str]:
    """``rpm -qa --qf '%{NAME} %{VERSION}\\n' ...`` -> the first version."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            v = _upstream(parts[1])
            if v:
                return v
    return None


def parse_is_active(text: str, units: List[str]) -> Dict[str, str]:
    """``systemctl is-active u1 u2 ...`` prints one state per unit, in order."""
    states = [line.strip() for line in text.splitlines() if line.strip()]
    return {u: states[i] for i, u in enumerate(units) if i < len(states)}


def parse_show(text: str, units: List[str]) -> Optional[Dict[str, Dict[str, str]]]:
    """``systemctl show -p Id,LoadState,ActiveState,SubState,MainPID -- u1 u2 ...``: one block of ``Key=value`` lines
    per unit, in the order asked, blocks separated by an empty line -> ``{unit: {key: value}}``; None when the
    number of blocks is not the number of units (the answer cannot be matched to the units)."""
    blocks: List[Dict[str, str]] = []
    cur: Dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if cur:
                blocks.append(cur)
                cur = {}
            continue
        key, sep, value = line.partition("=")
        if sep and len(line) <= MAX_LINE_CHARS:
            cur[key.strip()] = value.strip()
    if cur:
        blocks.append(cur)
    if len(blocks) != len(units):
        return None
    return dict(zip(units, blocks))


def parse_proc_status(text: str) -> Dict[str, Any]:
    """``/proc/<pid>/status`` -> ``{uids: [real, effective, saved, fs] or None, state: "S"/"Z"/... or None}``."""
    uids: Optional[List[int]] = None
    state: Optional[str] = None
    for line in text.splitlines():
        if line.startswith("Uid:"):
            nums = [to_int(f) for f in line[4:].split()[:4]]
            uids = [n for n in nums if n is not None] if len(nums) == 4 and None not in nums else None
        elif line.startswith("State:"):
            state = line[6:].strip()[:1] or None
    return {"uids": uids, "state": state}
