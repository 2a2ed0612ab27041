# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drain-and-replace (docs/replace.md): part inventories, replacement verification, evidence manifest and the
replacement record state machine. Pure functions plus small file helpers for the record and the manifest.

The action plugins ``gpuops.cluster.replace_record`` (the record) and ``gpuops.cluster.replace_parts``
(inventories, verification, the evidence bundle) are the ways the ``gpuops.cluster.replace`` role reaches it.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import normalize_bus_id
from ansible_collections.gpuops.cluster.plugins.module_utils._files import ensure_private_dir
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import parse_time, utcnow_iso
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store.state import StateError, StateLock, atomic_write_json
from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson

SCHEMA = "gpuops.replace/v1"
MANIFEST_SCHEMA = "gpuops.evidence/v1"
PARTS = ("gpu", "baseboard", "hca", "psu", "dimm", "fan", "node")
#: Steps in order; the record's ``steps`` maps each reached step to when (and with what).
PREPARE_STEPS = ("opened", "isolated", "drained", "evidence", "powered_off", "handed_over")
RETURN_STEPS = ("powered_on", "node_up", "verified", "accepted", "resumed", "closed")
STEPS = PREPARE_STEPS + RETURN_STEPS
REPLACED, NOT_REPLACED, NOT_VERIFIABLE = "replaced", "not_replaced", "not_verifiable"

_SAFE = re.compile(r"^[A-Za-z0-9_.@:+-]+$")
_PSU_NAME = re.compile(r"^(?:psu|ps|pws|power\s*supply)\s*\d*", re.I)


class ReplaceError(ValueError):
    """Bad request (unknown part, unsafe ticket/host name, step out of order)."""


def _s(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ("" if value is None else str(value))


def _list(value: Any) -> List[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _serial(value: Any) -> Optional[str]:
    s = _s(value)
    return None if s.lower() in ("", "n/a", "unknown", "none", "null", "[not supported]", "not specified") else s


# -- inventories ---------------------------------------------------------------------------------------------
def _gpu_inventory(inv: Dict[str, Dict[str, Any]], gpu: Dict[str, Any], remembered: Dict[str, Any]) -> None:
    for g in _list(gpu.get("gpus")):
        bus = normalize_bus_id(g.get("bus_id")) if isinstance(g, dict) and g.get("bus_id") else None
        if not bus:
            continue
        serial = _serial(g.get("serial"))
        if serial is None and g.get("readable") is False:
            serial = _serial(_dict(remembered.get(bus)).get("serial"))
        inv["gpu"][bus] = serial
        inv["gpu_uuid"][bus] = _serial(g.get("uuid"))


def _redfish_inventory(inv: Dict[str, Dict[str, Any]], red: Dict[str, Any]) -> None:
    """PSUs, DIMMs (by id, else name) and system serials from the Redfish part of ``bmc`` facts."""
    for section, key, prefix in (("psus", "psu", ""), ("memory", "dimm", ""), ("systems", "node", "system:")):
        for p in _list(red.get(section)):
            name = (_s(p.get("id")) or ("" if key == "node" else _s(p.get("name")))) if isinstance(p, dict) else ""
            if name:
                inv[key][prefix + name] = _serial(p.get("serial"))


def _fru_inventory(inv: Dict[str, Dict[str, Any]], fru: List[Any]) -> None:
    for f in fru:
        if not isinstance(f, dict):
            continue
        name = _s(f.get("name"))
        if _PSU_NAME.match(name):
            inv["psu"].setdefault(name, _serial(f.get("serial")))
        elif f.get("id") == 0 or "builtin" in name.lower():
            for key in ("serial", "board_serial", "chassis_serial"):
                if key in f:
                    inv["node"]["fru:" + key] = _serial(f.get(key))


def part_inventory(facts: Any, bmc_remote: Any = None, state_gpus: Any = None) -> Dict[str, Any]:
    """Serials by part from normalized facts (docs/facts.md).

    ``gpu``: bus id -> serial (``gpu_uuid``: bus id -> UUID); ``hca``: name -> serial, else node GUID (a new
    card has a new GUID); ``hca_psid``: name -> board id; ``psu`` / ``dimm``: Redfish PSUs / Memory and FRU
    ``PSU*`` entries; ``node``: system / product / board / chassis serials; ``fan``: fan sensor status.
    ``state_gpus`` (the state dir's ``gpu.gpus``) fills the serial of a GPU that is not readable right now.
    """
    facts = _dict(facts)
    inv: Dict[str, Dict[str, Any]] = {
        k: {} for k in ("gpu", "gpu_uuid", "hca", "hca_psid", "psu", "dimm", "node", "fan")
    }
    _gpu_inventory(inv, _dict(facts.get("gpu")), _dict(state_gpus))
    for h in _list(_dict(facts.get("ib")).get("hcas")):
        if isinstance(h, dict) and _s(h.get("name")):
            inv["hca"][_s(h["name"])] = _serial(h.get("serial")) or _serial(h.get("node_guid"))
            inv["hca_psid"][_s(h["name"])] = _serial(h.get("board_id"))
    for bmc in (_dict(facts.get("bmc")), _dict(bmc_remote)):
        _redfish_inventory(inv, _dict(bmc.get("redfish")))
        _fru_inventory(inv, _list(bmc.get("fru")))
        for s in _list(bmc.get("sensors")):
            if isinstance(s, dict) and _s(s.get("type")) == "fan":
                inv["fan"][_s(s.get("name"))] = _s(s.get("status")) or None
    return inv


def _compare(before: Dict[str, Any], after: Dict[str, Any], keys: List[str]) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {"changed": [], "unchanged": [], "unknown": []}
    for k in keys:
        b, a = before.get(k), after.get(k)
        if b is None or a is None:
            out["unknown"].append(k)
        elif a != b:
            out["changed"].append(k)
        else:
            out["unchanged"].append(k)
    return out


def _verify_fan(fan_confirmed: bool, clean: Optional[bool]):
    if not fan_confirmed:
        return NOT_VERIFIABLE, "fans have no readable serial: the operator confirmation is missing"
    if clean is not True:
        return NOT_VERIFIABLE, "fan sensors or SEL not clean after the swap"
    return REPLACED, "operator confirmed the fan swap; fan sensors and SEL clean"


def _keys(part: str, component: Optional[str], b: Dict[str, Any], a: Dict[str, Any]):
    """(serial keys to compare, why there are none)."""
    if part == "gpu":
        key = normalize_bus_id(component) if component else None
        return ([key], None) if key else ([], "a GPU swap needs the bus id of the GPU (component)")
    if part in ("baseboard", "node"):
        keys = sorted(set(b) | set(a))
        return keys, (None if keys else "no %s serials in the inventory before or after" % _section(part))
    if not component:
        return [], "a %s swap needs the component (name/id) that was replaced" % part
    return [component], None


def _section(part: str) -> str:
    return "gpu" if part in ("gpu", "baseboard") else part


def _single_verdict(res: Dict[str, Any], part: str, key: str, b: Dict[str, Any], a: Dict[str, Any]):
    """One part (gpu, hca, psu, dimm): its serial changed, and no other serial of its kind did."""
    others = _compare(b, a, sorted((set(b) | set(a)) - {key}))
    res["unexpected"] = others["changed"]
    if res["unchanged"]:
        return NOT_REPLACED, "part not replaced: serial of %s unchanged (%s)" % (key, b.get(key))
    if others["changed"]:
        return NOT_VERIFIABLE, "other %s serials changed too: %s" % (_section(part), ", ".join(others["changed"]))
    return REPLACED, "%s %s: serial %s -> %s" % (part, key, b.get(key), a.get(key))


def _whole_verdict(res: Dict[str, Any], part: str):
    """A baseboard (every GPU serial changed) or a node (any system/product/board/chassis serial changed)."""
    if part == "baseboard":
        if res["unchanged"]:
            return NOT_REPLACED, "part not replaced: GPU serials unchanged on %s" % ", ".join(res["unchanged"])
        return REPLACED, "baseboard: all %d GPU serials changed" % len(res["changed"])
    if not res["changed"]:
        return NOT_REPLACED, "part not replaced: node serials unchanged"
    return REPLACED, "node serials changed: %s" % ", ".join(res["changed"])


def _serial_verdict(res: Dict[str, Any], part: str, component: Optional[str], before: Any, after: Any):
    b, a = _dict(_dict(before).get(_section(part))), _dict(_dict(after).get(_section(part)))
    keys, problem = _keys(part, component, b, a)
    if problem:
        return NOT_VERIFIABLE, problem
    res.update(_compare(b, a, keys))
    if res["unknown"]:
        return NOT_VERIFIABLE, "serial unknown before or after for: %s" % ", ".join(res["unknown"])
    if part in ("gpu", "hca", "psu", "dimm"):
        return _single_verdict(res, part, keys[0], b, a)
    return _whole_verdict(res, part)


def verify(
    part: str,
    component: Optional[str],
    before: Any,
    after: Any,
    fan_confirmed: bool = False,
    fan_clean: Optional[bool] = None,
) -> Dict[str, Any]:
    """Was ``part`` (``component``: bus id, HCA name, PSU id, DIMM id) replaced between two inventories?

    Returns ``{verdict: replaced|not_replaced|not_verifiable, reason, changed, unchanged, unknown}``. A serial
    unknown before or after is ``not_verifiable``; so is a serial change on a part nobody said was swapped.
    """
    if part not in PARTS:
        raise ReplaceError("unknown part %r (one of %s)" % (part, ", ".join(PARTS)))
    res: Dict[str, Any] = {"part": part, "component": component, "changed": [], "unchanged": [], "unknown": []}
    if part == "fan":
        verdict, reason = _verify_fan(fan_confirmed, fan_clean)
    else:
        verdict, reason = _serial_verdict(res, part, component, before, after)
    res.update(verdict=verdict, reason=reason)
    return res


def fan_clean(bmc: Any, since: Optional[str] = None) -> bool:
    """Fan sensors all ok and no critical fan SEL event (at or after ``since`` when given; an event without a
    readable time does not count then)."""
    bmc = _dict(bmc)
    after = parse_time(since) if since is not None else None
    fans = [s for s in _list(bmc.get("sensors")) if isinstance(s, dict) and _s(s.get("type")) == "fan"]
    if not fans or any(_s(s.get("status")) != "ok" for s in fans):
        return False
    for ev in _list(bmc.get("sel")):
        if not isinstance(ev, dict) or "fan" not in (_s(ev.get("sensor_type")) + _s(ev.get("sensor"))).lower():
            continue
        if _s(ev.get("severity")) not in ("critical", "non_recoverable"):
            continue
        when = parse_time(ev.get("time"))
        if since is None or (after is not None and when is not None and when >= after):
            return False
    return True


# -- evidence manifest ---------------------------------------------------------------------------------------
def hash_tree(root: str, skip: tuple = ("manifest.json",)) -> List[Dict[str, Any]]:
    """sha256 and size of every regular file under ``root`` (sorted relative paths, symlinks not followed)."""
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if rel in skip or os.path.islink(path) or not os.path.isfile(path):
                continue
            h = hashlib.sha256()
            with open(path, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            files.append({"path": rel, "sha256": h.hexdigest(), "size": os.path.getsize(path)})
    return sorted(files, key=lambda f: f["path"])


def manifest(head: Any, files: List[Dict[str, Any]], serials: Any, created: Optional[str] = None) -> Dict[str, Any]:
    """The evidence bundle manifest: what (``head``: ticket, host, part, component, and ``extra`` keys merged in),
    every file with its sha256, the serials."""
    head = _dict(head)
    m = {
        "schema": MANIFEST_SCHEMA,
        "ticket": _s(head.get("ticket")),
        "host": _s(head.get("host")),
        "part": _s(head.get("part")),
        "component": _s(head.get("component")) or None,
        "created": created or utcnow_iso(),
        "files": sorted(_list(files), key=lambda f: f.get("path", "")),
        "serials": _dict(serials),
        "gpu_uuids": _dict(_dict(serials).get("gpu_uuid")),
        "hca_psids": _dict(_dict(serials).get("hca_psid")),
    }
    m.update(_dict(head.get("extra")))
    return m


def verify_manifest(root: str) -> Dict[str, Any]:
    """Re-hash a bundle against its manifest.json: ``{ok, missing, mismatched, extra}``."""
    with open(os.path.join(root, "manifest.json"), encoding="utf-8") as fh:
        m = _safejson.loads(fh.read(), what="manifest.json")
    want = {f["path"]: f["sha256"] for f in _list(m.get("files"))}
    have = {f["path"]: f["sha256"] for f in hash_tree(root)}
    res = {
        "missing": sorted(set(want) - set(have)),
        "mismatched": sorted(p for p in want if p in have and have[p] != want[p]),
        "extra": sorted(set(have) - set(want)),
    }
    res["ok"] = not (res["missing"] or res["mismatched"] or res["extra"])
    return res


# -- the replacement record ----------------------------------------------------------------------------------
def _safe(name: str, what: str) -> str:
    if not name or not _SAFE.match(name):
        raise ReplaceError("unsafe %s name %r (allowed: letters, digits, _.@:+-)" % (what, name))
    return name


def record_path(state_dir: str, ticket: str, host: str) -> str:
    return os.path.join(state_dir, "replace", "%s-%s.json" % (_safe(ticket, "ticket"), _safe(host, "host")))


def new_record(
    ticket: str, host: str, part: str, component: Optional[str], now: Optional[str] = None
) -> Dict[str, Any]:
    if part not in PARTS:
        raise ReplaceError("unknown part %r (one of %s)" % (part, ", ".join(PARTS)))
    t = now or utcnow_iso()
    return {
        "schema": SCHEMA,
        "ticket": _safe(ticket, "ticket"),
        "host": _safe(host, "host"),
        "part": part,
        "component": component or None,
        "status": "open",  # open | waiting (technician) | stopped | closed
        "step": "opened",
        "steps": {"opened": {"at": t}},
        "stopped": None,
        "left": None,
        "history": [{"at": t, "event": "opened", "part": part, "component": component or None}],
        "before": None,
        "after": None,
        "verdict": None,
        "evidence": None,
        "created": t,
        "updated": t,
    }


def done_steps(record: Any) -> List[str]:
    steps = _dict(_dict(record).get("steps"))
    return [s for s in STEPS if s in steps]


def next_step(record: Any) -> Optional[str]:
    done = set(done_steps(record))
    for s in STEPS:
        if s not in done:
            return s
    return None


def advance(record: Dict[str, Any], step: str, data: Any = None, now: Optional[str] = None) -> Dict[str, Any]:
    """Mark ``step`` reached (idempotent). Steps must be reached in order; ``data`` keys ``before``, ``after``,
    ``verdict``, ``evidence`` are stored at the top level, anything else with the step."""
    if step not in STEPS:
        raise ReplaceError("unknown step %r" % step)
    if record.get("status") == "closed":
        raise ReplaceError("record %s-%s is closed" % (record.get("ticket"), record.get("host")))
    idx = STEPS.index(step)
    missing = [s for s in STEPS[:idx] if s not in record["steps"]]
    if missing:
        raise ReplaceError("step %s before %s" % (step, ", ".join(missing)))
    t = now or utcnow_iso()
    data = dict(_dict(data))
    for key in ("before", "after", "verdict", "evidence"):
        if key in data:
            record[key] = data.pop(key)
    if step not in record["steps"]:
        record["steps"][step] = dict(data, at=t)
    record["step"] = step
    record["stopped"] = None
    record["left"] = None
    record["status"] = {"handed_over": "waiting", "closed": "closed"}.get(step, "open")
    record["history"].append(dict(data, at=t, event=step))
    record["updated"] = t
    return record


def stop(record: Dict[str, Any], step: str, reason: str, data: Any = None, now: Optional[str] = None) -> Dict[str, Any]:
    """The flow stopped before ``step`` (e.g. ``verified``: part not replaced, ``powered_off``: the BMC refused);
    the node stays drained. ``data`` may hold ``message`` (the BMC's / tool's own words) and ``left`` (the node's
    state afterwards, e.g. ``{slurm_state, slurm_reason, power}``); ``left`` is also kept at the top level."""
    if step not in STEPS:
        raise ReplaceError("unknown step %r" % step)
    if not _s(reason):
        raise ReplaceError("a stop needs a reason")
    t = now or utcnow_iso()
    data = dict(_dict(data))
    for key in ("after", "verdict", "left"):
        if key in data:
            record[key] = data.pop(key)
    record["status"] = "stopped"
    record["stopped"] = dict(data, step=step, reason=reason, at=t)
    record["history"].append(dict(data, at=t, event="stopped", step=step, reason=reason))
    record["updated"] = t
    return record


def reopen_for_prepare(record: Dict[str, Any], now: Optional[str] = None) -> Dict[str, Any]:
    """A prepare run on a stopped record (the swap must be redone): forget power-off and every return step."""
    t = now or utcnow_iso()
    if record.get("status") != "stopped":
        return record
    for s in ("powered_off", "handed_over") + RETURN_STEPS:
        record["steps"].pop(s, None)
    record["status"], record["stopped"], record["after"], record["verdict"] = "open", None, None, None
    record["step"] = done_steps(record)[-1]
    record["history"].append({"at": t, "event": "reopened"})
    record["updated"] = t
    return record


def outcome(record: Any, phase: str, done_before: Optional[List[str]] = None) -> Dict[str, Any]:
    """The run's outcome for the node (the issue-21 vocabulary, docs/replace.md): the prepare phase is done when
    the node is handed over, the return phase when the record is closed (``already`` when that was so before this
    run, ``done_before``: the steps reached before it). A stop after the isolation is ``left_drained`` (the node
    stays out of service), a stop before it ``refused`` (nothing changed); a record neither stopped nor at its
    goal (the run broke off) is ``failed``."""
    r = _dict(record)
    goal = "handed_over" if phase == "prepare" else "closed"
    steps = _dict(r.get("steps"))
    stopped = _dict(r.get("stopped"))
    out: Dict[str, Any] = {"decision": "%s: %s" % (phase, r.get("status") or "no record")}
    if r.get("status") != "stopped" and goal in steps:
        out["outcome"] = "already" if goal in (done_before or []) else "done"
        out["detail"] = "handed over to the technician" if goal == "handed_over" else "part replaced; back in service"
        return out
    drained = "isolated" in steps
    if stopped:
        out["outcome"] = "left_drained" if drained else "refused"
        out["detail"] = "stopped at %s: %s" % (stopped.get("step"), stopped.get("reason"))
        out["error"] = _s(stopped.get("message")) or None
    else:
        out["outcome"] = "left_drained" if drained else "failed"
        out["detail"] = "stopped before %s (run broke off)" % (next_step(r) or goal)
    left = _dict(r.get("left"))
    if left.get("slurm_state"):
        out["slurm_state"] = _s(left["slurm_state"])
    if left.get("slurm_reason"):
        out["slurm_reason"] = _s(left["slurm_reason"])
    return out


def load_record(state_dir: str, ticket: str, host: str) -> Optional[Dict[str, Any]]:
    path = record_path(state_dir, ticket, host)
    if os.path.islink(path):
        raise ReplaceError("replacement record %s is a symbolic link: refusing it" % path)
    try:
        with open(path, encoding="utf-8") as fh:
            data = _safejson.loads(fh.read(), what="the replacement record")
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise ReplaceError("corrupt replacement record %s: %s" % (path, exc)) from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ReplaceError("not a replacement record: %s" % path)
    return data


def save_record(state_dir: str, record: Dict[str, Any]) -> str:
    path = record_path(state_dir, record["ticket"], record["host"])
    ensure_private_dir(os.path.dirname(path))
    atomic_write_json(path, record)
    return path


def summary(record: Any) -> Dict[str, Any]:
    r = _dict(record)
    return {
        "status": r.get("status"),
        "step": r.get("step"),
        "done": done_steps(r),
        "next": next_step(r),
        "stopped": r.get("stopped"),
        "verdict": r.get("verdict"),
        "part": r.get("part"),
        "component": r.get("component"),
    }


def _open(rec: Optional[Dict[str, Any]], ticket: str, host: str, req: Dict[str, Any]) -> Dict[str, Any]:
    part, comp, phase = _s(req.get("part")), _s(req.get("component")) or None, _s(req.get("phase"))
    if rec is None:
        return new_record(ticket, host, part, comp)
    if (rec.get("part"), rec.get("component")) != (part, comp):
        raise ReplaceError(
            "record %s-%s is for %s %s, not %s %s" % (ticket, host, rec.get("part"), rec.get("component"), part, comp)
        )
    if rec.get("status") == "closed":
        if phase == "return":
            return rec  # a rerun of the return phase: nothing left to do
        raise ReplaceError("replacement %s on %s is closed; use a new ticket" % (ticket, host))
    if phase == "prepare":
        return reopen_for_prepare(rec)
    return rec


def apply_command(rec: Optional[Dict[str, Any]], command: str, ticket: str, host: str, req: Any) -> Dict[str, Any]:
    """The record after ``command`` (``open|step|stop|show``) on ``rec`` (None: there is none yet); ``rec``
    itself is left as it was; a step reached before is not recorded again. ``req`` holds ``part, component, phase`` (open), ``step, data`` (step) or
    ``step, reason, data`` (stop)."""
    req = _dict(req)
    rec = copy.deepcopy(rec)
    if command == "open":
        return _open(rec, ticket, host, req)
    if rec is None:
        raise ReplaceError("no replacement record for %s on %s: run replace_phase=prepare first" % (ticket, host))
    if command == "step":
        if _s(req.get("step")) in _dict(rec.get("steps")) and rec.get("status") != "stopped":
            return rec  # reached before: recorded once
        return advance(rec, _s(req.get("step")), req.get("data"))
    if command == "stop":
        return stop(rec, _s(req.get("step")), _s(req.get("reason")), req.get("data"))
    if command != "show":
        raise ReplaceError("unknown command %r" % command)
    return rec


def update_record(state_dir: str, ticket: str, host: str, command: str, req: Any = None, check_mode: bool = False):
    """Load, apply ``command`` and save the record under its lock. Returns ``(before, after, path)``; ``before``
    is None for a new record. ``show`` and check mode read only (no lock, nothing written)."""
    if not state_dir:
        raise ReplaceError("state_dir is required")
    path = record_path(state_dir, ticket, host)
    if check_mode or command == "show":
        before = load_record(state_dir, ticket, host)
        return before, apply_command(before, command, ticket, host, req), path
    ensure_private_dir(os.path.join(state_dir, "replace"))
    try:
        with StateLock(state_dir, "replace-%s-%s" % (ticket, host)):
            before = load_record(state_dir, ticket, host)
            after = apply_command(before, command, ticket, host, req)
            if after != before:
                save_record(state_dir, after)
    except StateError as exc:
        raise ReplaceError(str(exc)) from exc
    return before, after, path


# -- the evidence bundle -------------------------------------------------------------------------------------
def _bundle_target(root: str, name: str) -> str:
    target = os.path.realpath(os.path.join(root, name))
    if not target.startswith(os.path.realpath(root) + os.sep):
        raise ReplaceError("refusing to write outside the bundle: %r" % name)
    return target


def write_bundle(root: str, head: Dict[str, Any], serials: Any, writes: Any = None, check_mode: bool = False):
    """Write ``writes`` (name -> JSON document; None skips it) into the bundle ``root``, then ``manifest.json``
    over every file. ``head`` holds ``ticket, host, part, component, extra``. Check mode writes nothing and
    returns the manifest as it would be (files already there). Returns ``(manifest, written names)``."""
    if not root:
        raise ReplaceError("root (the bundle directory) is required")
    docs = {name: doc for name, doc in sorted(_dict(writes).items()) if doc is not None}
    targets = {name: _bundle_target(root, name) for name in docs}
    if not check_mode:
        for name, doc in docs.items():
            ensure_private_dir(os.path.dirname(targets[name]))
            atomic_write_json(targets[name], doc)
    files = hash_tree(root) if os.path.isdir(root) else []
    m = manifest(head, files, serials)
    if not check_mode:
        atomic_write_json(os.path.join(root, "manifest.json"), m)
    return m, sorted(docs) + ["manifest.json"]
