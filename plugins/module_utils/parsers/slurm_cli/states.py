# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm node and job state words, in every spelling the client tools print (cluster-formats.md 1.3 and 2).

``node_state(text)`` reads a node state as sinfo (``%t`` compact, ``%T``/StateLong long, with its one flag suffix),
``-O StateComplete`` (``idle+drain+maintenance``), ``scontrol`` (``IDLE+DRAIN+NOT_RESPONDING``) or JSON (a list of
words) prints it, and returns ``{"state": <long word, lower case, no suffix>, "flags": [suffix chars],
"state_flags": [UPPER flag names]}``. ``state`` is what sinfo's ``%T`` would print for that node (Slurm's
``node_state_string``: DRAIN on an allocated/mixed/completing node is ``draining``, otherwise ``drained``, also over
DOWN; FAIL is ``failing``/``fail``), so one check reads one vocabulary.

``job_state(text)`` reads sacct/squeue job states (``CANCELLED by 1234``, ``OUT_OF_ME+`` cut, squeue's ``PD``) and
says who caused an end: ``node`` (NODE_FAIL, BOOT_FAIL, LAUNCH_FAILED), ``user`` (FAILED, OUT_OF_MEMORY, TIMEOUT,
CANCELLED by a user), ``scheduler`` (PREEMPTED, REQUEUED, DEADLINE, REVOKED) or None. Pure; Python 3.8+.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

#: compact (%t) and long (%T) words -> the long word [SL-src node_state_string / node_state_string_compact]
_WORDS = {
    "alloc": "allocated",
    "allocated": "allocated",
    "comp": "completing",
    "completing": "completing",
    "drng": "draining",
    "draining": "draining",
    "drain": "drained",
    "drained": "drained",
    "failg": "failing",
    "failing": "failing",
    "fail": "fail",
    "mix": "mixed",
    "mixed": "mixed",
    "idle": "idle",
    "resv": "reserved",
    "reserved": "reserved",
    "block": "blocked",
    "blocked": "blocked",
    "plnd": "planned",
    "planned": "planned",
    "maint": "maint",
    "maintenance": "maint",
    "boot": "reboot",
    "reboot": "reboot",
    "futr": "future",
    "future": "future",
    "unk": "unknown",
    "unknown": "unknown",
    "inval": "inval",
    "invalid": "inval",
    "invalid_reg": "inval",
    "down": "down",
    "err": "error",
    "error": "error",
    "pow_dn": "power_down",
    "power_down": "power_down",
    "pow_up": "power_up",
    "power_up": "power_up",
    "powering_up": "powering_up",
    "powered_dn": "powered_down",
    "powered_down": "powered_down",
    "powring_dn": "powering_down",
    "powering_down": "powering_down",
    "npc": "perfctrs",
    "perfctrs": "perfctrs",
    "cloud": "cloud",
}
#: flag suffixes, in sinfo's priority order, and the flag each stands for [SL-src]
SUFFIXES = (
    ("$", "MAINTENANCE"),
    ("^", "REBOOT_ISSUED"),
    ("@", "REBOOT_REQUESTED"),
    ("#", "POWERING_UP"),
    ("%", "POWERING_DOWN"),
    ("~", "POWERED_DOWN"),
    ("!", "POWER_DOWN"),
    ("*", "NOT_RESPONDING"),
    ("+", "COMPLETING"),
    ("-", "PLANNED"),
)
_SUFFIX = dict(SUFFIXES)
_FLAG_SUFFIX = {flag: ch for ch, flag in SUFFIXES}
_BASES = ("DOWN", "IDLE", "ALLOCATED", "ALLOC", "ERROR", "MIXED", "FUTURE", "UNKNOWN")
_FLAG_ALIASES = {
    "MAINT": "MAINTENANCE",
    "NO_RESPOND": "NOT_RESPONDING",
    "POWER_SAVE": "POWERED_DOWN",
    "INVAL": "INVALID_REG",
}


class StateError(ValueError):
    """A word that is no Slurm node state."""


def _strip_suffixes(word: str) -> Tuple[str, List[str]]:
    chars: List[str] = []
    while word and word[-1] in _SUFFIX:
        chars.insert(0, word[-1])
        word = word[:-1]
    return word, chars


def _from_words(base: str, flags: Sequence[str]) -> str:
    """sinfo's long state word for a base state and its flags (the precedence of node_state_string)."""
    busy = base in ("ALLOCATED", "ALLOC", "MIXED") or "COMPLETING" in flags
    if "DRAIN" in flags or base in ("DRAIN", "DRAINED", "DRAINING"):
        return "draining" if busy or base == "DRAINING" else "drained"
    if "FAIL" in flags:
        return "failing" if busy else "fail"
    if "INVALID_REG" in flags or base == "INVAL":
        return "inval"
    if base in ("IDLE", "FUTURE") and ("REBOOT_ISSUED" in flags or "REBOOT_REQUESTED" in flags):
        return "reboot"
    if base in ("IDLE", "FUTURE") and "MAINTENANCE" in flags:
        return "maint"
    if base == "IDLE":
        for flag, word in (("RESERVED", "reserved"), ("BLOCKED", "blocked"), ("PLANNED", "planned")):
            if flag in flags:
                return word
    return _WORDS.get(base.lower(), base.lower())


def node_state(value: Any) -> Dict[str, Any]:
    """A node state in any printed form (see the module doc); raises StateError for a word Slurm never prints."""
    words: List[str]
    if isinstance(value, (list, tuple)):
        words = [str(w) for w in value if str(w).strip()]
    else:
        text = str(value or "").strip()
        if not text:
            raise StateError("empty node state")
        words = []
        for part in text.split("+"):
            if part:
                words.append(part)
            elif words:
                words[-1] += "+"  # 'alloc+' / 'mixed+': the COMPLETING suffix, not a separator
    if not words:
        raise StateError("empty node state")
    first, chars = _strip_suffixes(words[0].strip())
    flags: List[str] = [_SUFFIX[c] for c in chars]
    low = first.lower()
    if low not in _WORDS and first.upper() not in _BASES:
        raise StateError("unknown node state %r" % words[0])
    for w in words[1:]:
        w, more = _strip_suffixes(w.strip())
        name = w.upper()
        name = _FLAG_ALIASES.get(name, name)
        if name and name not in flags:
            flags.append(name)
        flags += [_SUFFIX[c] for c in more if _SUFFIX[c] not in flags]
    base = first.upper()
    long_word = _WORDS.get(low) if len(words) == 1 else None
    if long_word is None:
        long_word = _from_words(base, flags)
    if long_word in ("drained", "draining") and "DRAIN" not in flags:
        flags.append("DRAIN")
    if long_word in ("fail", "failing") and "FAIL" not in flags:
        flags.append("FAIL")
    suffix = [_FLAG_SUFFIX[f] for f in flags if f in _FLAG_SUFFIX]
    return {"state": long_word, "flags": suffix, "state_flags": flags}


# ---------------------------------------------------------------------------------------------------------------
# job states

#: sacct/squeue job states [SL-man sacct, squeue JOB STATE CODES]
JOB_STATES = (
    "BOOT_FAIL",
    "CANCELLED",
    "COMPLETED",
    "COMPLETING",
    "CONFIGURING",
    "DEADLINE",
    "FAILED",
    "LAUNCH_FAILED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PENDING",
    "PREEMPTED",
    "REQUEUED",
    "REQUEUE_FED",
    "REQUEUE_HOLD",
    "RESIZING",
    "RESV_DEL_HOLD",
    "REVOKED",
    "RUNNING",
    "SIGNALING",
    "SPECIAL_EXIT",
    "STAGE_OUT",
    "STOPPED",
    "SUSPENDED",
    "TIMEOUT",
)
#: squeue's compact codes (%t) [SL-man squeue]
JOB_CODES = {
    "BF": "BOOT_FAIL",
    "CA": "CANCELLED",
    "CD": "COMPLETED",
    "CF": "CONFIGURING",
    "CG": "COMPLETING",
    "DL": "DEADLINE",
    "F": "FAILED",
    "NF": "NODE_FAIL",
    "OOM": "OUT_OF_MEMORY",
    "PD": "PENDING",
    "PR": "PREEMPTED",
    "R": "RUNNING",
    "RD": "RESV_DEL_HOLD",
    "RF": "REQUEUE_FED",
    "RH": "REQUEUE_HOLD",
    "RQ": "REQUEUED",
    "RS": "RESIZING",
    "RV": "REVOKED",
    "SI": "SIGNALING",
    "SE": "SPECIAL_EXIT",
    "SO": "STAGE_OUT",
    "ST": "STOPPED",
    "S": "SUSPENDED",
    "TO": "TIMEOUT",
}
NODE_SIDE = ("NODE_FAIL", "BOOT_FAIL", "LAUNCH_FAILED")
USER_SIDE = ("FAILED", "OUT_OF_MEMORY", "TIMEOUT", "CANCELLED")
SCHEDULER_SIDE = ("PREEMPTED", "REQUEUED", "DEADLINE", "REVOKED")


def job_state(text: Any, cut: bool = False) -> Dict[str, Any]:
    """``{"state", "cut", "by", "cause"}`` of a printed job state. ``cut``: the column cut it (``OUT_OF_ME+``): the
    state is the one documented state the remaining prefix names, else the prefix itself with ``cut`` kept true
    (never a guess between two states). ``by``: the uid of ``CANCELLED by <uid>``."""
    raw = str(text or "").strip()
    if (cut or raw.endswith("+")) and " " in raw:
        cut = True  # 'CANCELLED by 12+': the state word is whole, the uid is cut
        state, by = raw.split()[0].upper(), None
    elif cut or raw.endswith("+"):
        prefix = raw.rstrip("+").upper()
        cut = True
        names = [s for s in JOB_STATES if s.startswith(prefix)] if prefix else []
        state = names[0] if len(names) == 1 or prefix in names else prefix
        by = None
    else:
        words = raw.split()
        state = words[0].upper() if words else ""
        state = JOB_CODES.get(state, state)
        by = words[2] if len(words) >= 3 and words[1] == "by" else None
    cause = None
    if state in NODE_SIDE:
        cause = "node"
    elif state in SCHEDULER_SIDE:
        cause = "scheduler"
    elif state in USER_SIDE:
        cause = "admin" if state == "CANCELLED" and by == "0" else "user"
    return {"state": state, "cut": cut, "by": by, "cause": cause}


def exit_code(text: Any) -> Optional[List[int]]:
    """``[code, signal]`` of sacct's ``ExitCode`` (``0:125``, ``3:0``); None when unreadable."""
    parts = str(text or "").strip().split(":")
    if len(parts) != 2 or not all(re.match(r"^[0-9]{1,9}$", p) for p in parts):
        return None
    return [int(parts[0]), int(parts[1])]
