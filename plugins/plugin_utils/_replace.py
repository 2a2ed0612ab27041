# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drain-and-replace (docs/replace.md): part inventories, replacement verification, evidence manifest and the
replacement record state machine. Pure functions plus small file helpers for the record and the manifest.

``python -m ansible_collections.gpuops.cluster.plugins.plugin_utils._replace <command>`` reads a JSON request on
stdin and prints JSON (the ``gpuops.cluster.replace`` role calls it on the controller). Python 3.8+, no Ansible.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import sys
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ensure_private_dir, normalize_bus_id
from ansible_collections.gpuops.cluster.plugins.plugin_utils._state import StateError, StateLock, atomic_write_json

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


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


# -- inventories ---------------------------------------------------------------------------------------------
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
    remembered = _dict(state_gpus)
    for g in _list(_dict(facts.get("gpu")).get("gpus")):
        if not isinstance(g, dict):
            continue
        bus = normalize_bus_id(g.get("bus_id")) if g.get("bus_id") else None
        if not bus:
            continue
        serial = _serial(g.get("serial"))
        if serial is None and g.get("readable") is False:
            serial = _serial(_dict(remembered.get(bus)).get("serial"))
        inv["gpu"][bus] = serial
        inv["gpu_uuid"][bus] = _serial(g.get("uuid"))
    for h in _list(_dict(facts.get("ib")).get("hcas")):
        if isinstance(h, dict) and _s(h.get("name")):
            inv["hca"][_s(h["name"])] = _serial(h.get("serial")) or _serial(h.get("node_guid"))
            inv["hca_psid"][_s(h["name"])] = _serial(h.get("board_id"))
    for bmc in (facts.get("bmc"), bmc_remote):
        bmc = _dict(bmc)
        red = _dict(bmc.get("redfish"))
        for p in _list(red.get("psus")):
            if isinstance(p, dict) and (_s(p.get("name")) or _s(p.get("id"))):
                inv["psu"][_s(p.get("id")) or _s(p.get("name"))] = _serial(p.get("serial"))
        for m in _list(red.get("memory")):
            if isinstance(m, dict) and (_s(m.get("id")) or _s(m.get("name"))):
                inv["dimm"][_s(m.get("id")) or _s(m.get("name"))] = _serial(m.get("serial"))
        for s in _list(red.get("systems")):
            if isinstance(s, dict) and _s(s.get("id")):
                inv["node"]["system:" + _s(s["id"])] = _serial(s.get("serial"))
        for f in _list(bmc.get("fru")):
            if not isinstance(f, dict):
                continue
            name = _s(f.get("name"))
            if _PSU_NAME.match(name):
                inv["psu"].setdefault(name, _serial(f.get("serial")))
            elif f.get("id") == 0 or "builtin" in name.lower():
                for key in ("serial", "board_serial", "chassis_serial"):
                    if key in f:
                        inv["node"]["fru:" + key] = _serial(f.get(key))
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
    before, after = _dict(before), _dict(after)
    res: Dict[str, Any] = {"part": part, "component": component, "changed": [], "unchanged": [], "unknown": []}

    def done(verdict: str, reason: str) -> Dict[str, Any]:
        res.update(verdict=verdict, reason=reason)
        return res

    if part == "fan":
        if not fan_confirmed:
            return done(NOT_VERIFIABLE, "fans have no readable serial: the operator confirmation is missing")
        if fan_clean is not True:
            return done(NOT_VERIFIABLE, "fan sensors or SEL not clean after the swap")
        return done(REPLACED, "operator confirmed the fan swap; fan sensors and SEL clean")
    section = "gpu" if part in ("gpu", "baseboard") else part
    b, a = _dict(before.get(section)), _dict(after.get(section))
    if part == "gpu":
        key = normalize_bus_id(component) if component else None
        if not key:
            return done(NOT_VERIFIABLE, "a GPU swap needs the bus id of the GPU (component)")
        keys = [key]
    elif part in ("baseboard", "node"):
        keys = sorted(set(b) | set(a))
    else:
        if not component:
            return done(NOT_VERIFIABLE, "a %s swap needs the component (name/id) that was replaced" % part)
        keys = [component]
    if not keys:
        return done(NOT_VERIFIABLE, "no %s serials in the inventory before or after" % section)
    cmp_ = _compare(b, a, keys)
    res.update(cmp_)
    if cmp_["unknown"]:
        return done(NOT_VERIFIABLE, "serial unknown before or after for: %s" % ", ".join(cmp_["unknown"]))
    if part in ("gpu", "hca", "psu", "dimm"):
        others = _compare(b, a, sorted((set(b) | set(a)) - set(keys)))
        res["unexpected"] = others["changed"]
        if cmp_["unchanged"]:
            return done(NOT_REPLACED, "part not replaced: serial of %s unchanged (%s)" % (keys[0], b.get(keys[0])))
        if others["changed"]:
            return done(NOT_VERIFIABLE, "other %s serials changed too: %s" % (section, ", ".join(others["changed"])))
        return done(REPLACED, "%s %s: serial %s -> %s" % (part, keys[0], b.get(keys[0]), a.get(keys[0])))
    if part == "baseboard":
        if cmp_["unchanged"]:
            return done(NOT_REPLACED, "part not replaced: GPU serials unchanged on %s" % ", ".join(cmp_["unchanged"]))
        return done(REPLACED, "baseboard: all %d GPU serials changed" % len(keys))
    # node: any system/product/board/chassis serial changed
    if not cmp_["changed"]:
        return done(NOT_REPLACED, "part not replaced: node serials unchanged")
    return done(REPLACED, "node serials changed: %s" % ", ".join(cmp_["changed"]))


def fan_clean(bmc: Any, since: Optional[str] = None) -> bool:
    """Fan sensors all ok and no critical fan SEL event (at or after ``since`` when given)."""
    bmc = _dict(bmc)
    fans = [s for s in _list(bmc.get("sensors")) if isinstance(s, dict) and _s(s.get("type")) == "fan"]
    if not fans or any(_s(s.get("status")) != "ok" for s in fans):
        return False
    for ev in _list(bmc.get("sel")):
        if not isinstance(ev, dict) or "fan" not in (_s(ev.get("sensor_type")) + _s(ev.get("sensor"))).lower():
            continue
        if _s(ev.get("severity")) in ("critical", "non_recoverable") and (since is None or _s(ev.get("time")) >= since):
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


def manifest(
    ticket: str, host: str, part: str, component: Optional[str], files: List[Dict[str, Any]], serials: Any,
    extra: Any = None, created: Optional[str] = None,
) -> Dict[str, Any]:  # fmt: skip
    """The evidence bundle manifest: what, for which ticket/part, every file with its sha256, the serials."""
    m = {
        "schema": MANIFEST_SCHEMA,
        "ticket": ticket,
        "host": host,
        "part": part,
        "component": component,
        "created": created or now_iso(),
        "files": sorted(_list(files), key=lambda f: f.get("path", "")),
        "serials": _dict(serials),
        "gpu_uuids": _dict(_dict(serials).get("gpu_uuid")),
        "hca_psids": _dict(_dict(serials).get("hca_psid")),
    }
    m.update(_dict(extra))
    return m


def verify_manifest(root: str) -> Dict[str, Any]:
    """Re-hash a bundle against its manifest.json: ``{ok, missing, mismatched, extra}``."""
    with open(os.path.join(root, "manifest.json"), encoding="utf-8") as fh:
        m = json.load(fh)
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
    t = now or now_iso()
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
    t = now or now_iso()
    data = dict(_dict(data))
    for key in ("before", "after", "verdict", "evidence"):
        if key in data:
            record[key] = data.pop(key)
    if step not in record["steps"]:
        record["steps"][step] = dict(data, at=t)
    record["step"] = step
    record["stopped"] = None
    record["status"] = {"handed_over": "waiting", "closed": "closed"}.get(step, "open")
    record["history"].append(dict(data, at=t, event=step))
    record["updated"] = t
    return record


def stop(record: Dict[str, Any], step: str, reason: str, data: Any = None, now: Optional[str] = None) -> Dict[str, Any]:
    """The flow stopped before ``step`` (e.g. ``verified``: part not replaced); the node stays drained."""
    t = now or now_iso()
    data = dict(_dict(data))
    for key in ("after", "verdict"):
        if key in data:
            record[key] = data.pop(key)
    record["status"] = "stopped"
    record["stopped"] = dict(data, step=step, reason=reason, at=t)
    record["history"].append(dict(data, at=t, event="stopped", step=step, reason=reason))
    record["updated"] = t
    return record


def reopen_for_prepare(record: Dict[str, Any], now: Optional[str] = None) -> Dict[str, Any]:
    """A prepare run on a stopped record (the swap must be redone): forget power-off and every return step."""
    t = now or now_iso()
    if record.get("status") != "stopped":
        return record
    for s in ("powered_off", "handed_over") + RETURN_STEPS:
        record["steps"].pop(s, None)
    record["status"], record["stopped"], record["after"], record["verdict"] = "open", None, None, None
    record["step"] = done_steps(record)[-1]
    record["history"].append({"at": t, "event": "reopened"})
    record["updated"] = t
    return record


def load_record(state_dir: str, ticket: str, host: str) -> Optional[Dict[str, Any]]:
    path = record_path(state_dir, ticket, host)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
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


def _cli(cmd: str, req: Dict[str, Any]) -> Any:
    if cmd == "inventory":
        return part_inventory(req.get("facts"), req.get("bmc_remote"), req.get("state_gpus"))
    if cmd == "verify":
        after = req.get("after")
        if after is None and "facts" in req:  # one call: inventory of the facts, then the comparison
            after = part_inventory(req.get("facts"), req.get("bmc_remote"))
        res = verify(_s(req.get("part")), _s(req.get("component")) or None, req.get("before"), after,
                     bool(req.get("fan_confirmed")), fan_clean(req.get("bmc")) if req.get("bmc") else None)  # fmt: skip
        res["after"] = after
        return res
    if cmd == "manifest":
        root = _s(req.get("root"))
        serials = req.get("serials")
        if serials is None and "facts" in req:  # one call: inventory of the facts, serials.json, the manifest
            serials = part_inventory(req.get("facts"), req.get("bmc_remote"), req.get("state_gpus"))
        writes = _dict(req.get("write"))
        if "serials.json" in writes and writes["serials.json"] is None:
            writes["serials.json"] = serials
        for name, doc in sorted(writes.items()):
            if doc is None:
                continue
            target = os.path.realpath(os.path.join(root, name))
            if not target.startswith(os.path.realpath(root) + os.sep):
                raise ReplaceError("refusing to write outside the bundle: %r" % name)
            ensure_private_dir(os.path.dirname(target))
            atomic_write_json(target, doc)
        m = manifest(_s(req.get("ticket")), _s(req.get("host")), _s(req.get("part")), _s(req.get("component")) or None,
                     hash_tree(root), serials, req.get("extra"))  # fmt: skip
        atomic_write_json(os.path.join(root, "manifest.json"), m)
        return {"path": os.path.join(root, "manifest.json"), "files": len(m["files"]), "serials": serials}
    if cmd == "verify-manifest":
        return verify_manifest(_s(req.get("root")))
    state_dir, ticket, host = _s(req.get("state_dir")), _s(req.get("ticket")), _s(req.get("host"))
    if not state_dir:
        raise ReplaceError("state_dir is required")
    ensure_private_dir(os.path.join(state_dir, "replace"))
    with StateLock(state_dir, "replace-%s-%s" % (_safe(ticket, "ticket"), _safe(host, "host"))):
        rec = load_record(state_dir, ticket, host)
        if cmd == "open":
            part, comp = _s(req.get("part")), _s(req.get("component")) or None
            if rec is None:
                rec = new_record(ticket, host, part, comp)
            elif rec.get("status") == "closed":
                raise ReplaceError("replacement %s on %s is closed; use a new ticket" % (ticket, host))
            elif (rec.get("part"), rec.get("component")) != (part, comp):
                raise ReplaceError("record %s-%s is for %s %s, not %s %s" % (ticket, host, rec.get("part"),
                                                                             rec.get("component"), part, comp))  # fmt: skip
            elif _s(req.get("phase")) == "prepare":
                reopen_for_prepare(rec)
        elif rec is None:
            raise ReplaceError("no replacement record for %s on %s: run replace_phase=prepare first" % (ticket, host))
        elif cmd == "step":
            advance(rec, _s(req.get("step")), req.get("data"))
        elif cmd == "stop":
            stop(rec, _s(req.get("step")), _s(req.get("reason")), req.get("data"))
        elif cmd != "show":
            raise ReplaceError("unknown command %r" % cmd)
        path = save_record(state_dir, rec) if cmd != "show" else record_path(state_dir, ticket, host)
    return dict(summary(rec), path=path, record=rec)


def main(argv: Optional[List[str]] = None) -> int:
    """CLI: ``open|step|stop|show`` {state_dir, ticket, host, ...} | ``inventory`` | ``verify`` | ``manifest`` |
    ``verify-manifest``; JSON request on stdin, JSON answer on stdout (``{failed, msg}`` and exit 2 on errors)."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        req = json.loads(sys.stdin.read() or "{}")
        if not isinstance(req, dict):
            raise ReplaceError("request is not a JSON object")
        ans = _cli(argv[0] if argv else "", req)
    except (ReplaceError, StateError, ValueError, TypeError, KeyError, OSError) as exc:
        sys.stdout.write(json.dumps({"failed": True, "msg": str(exc)}) + "\n")
        return 2
    sys.stdout.write(json.dumps(ans, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())  # CLI only; never reached when imported by a module
