# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Coolant-leak response decisions (docs/leak.md): pure functions over ``bmc`` facts and inventory data.

- ``detect(bmc)``: is there an asserted/critical leak reading? Sources: Redfish leak detectors
  (``redfish.leak_detectors[].state``), IPMI leak sensors (``sensors[]`` of type ``leak``), SEL / Redfish log
  leak events (asserted and not later deasserted). A missing or unreadable sensor is ``unreadable``: it never
  powers anything off. Only a leak is a leak: coolant flow, pressure, level and temperature sensors (type
  ``coolant``) are reported under ``cooling`` and become ``bmc.coolant`` findings (isolate or monitor), never
  the power-off path.
- ``scope(...)``: the leak domain of the alarming node (``gpuops_leak_domain``, else ``gpuops_rack``) and which
  requested targets lie inside it.
- ``findings(...)`` / ``power_verdict(...)``: the run result (P0 "power-off unconfirmed", P2 "sensor unreadable").

The action plugin ``gpuops.cluster.leak_assess`` (``assess``, ``finish``, ``detect``) is how the
``gpuops.cluster.leak_response`` role reaches it on the controller.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._files import write_private_atomic
from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson

#: Readings that fire the response.
ASSERTED = "asserted"
#: A leak detector in Warning: reported (P1), never a power-off by itself.
WARNING = "warning"
CLEAR = "clear"
UNREADABLE = "unreadable"

#: A log/SEL event about a leak (not about coolant flow, pressure or temperature: "Coolant flow low" is no leak).
_LEAK_TEXT = re.compile(r"leak|moisture|drip", re.I)
_NO_LEAK_TEXT = re.compile(r"\bno leak|leak[- ]?free", re.I)
#: Coolant sensor status -> (level, severity, action) of the cooling finding. Never emergency_shutdown.
COOLING_LEVELS = {
    "critical": ("Critical", "P1", "isolate"),
    "non_recoverable": ("Critical", "P1", "isolate"),
    "non_critical": ("Warning", "P2", "monitor"),
}
_CRIT_STATUS = ("critical", "non_recoverable")
_UNREADABLE_STATUS = ("unknown", "not_present", None, "")


def _s(value: Any) -> str:
    """Text of a reading field: stripped; None is empty."""
    return value.strip() if isinstance(value, str) else ("" if value is None else str(value))


def _of(value: Any, kind: type) -> Any:
    """``value`` when it is a ``kind`` (list or dict), else an empty one: readings are untrusted JSON."""
    return value if isinstance(value, kind) else kind()


def _states_asserted(states: List[Any]) -> bool:
    """An IPMI discrete leak sensor lists its active states: 'State Asserted' / 'Leak detected' fires."""
    for st in states:
        t = _s(st).lower()
        if "deasserted" in t or "no leak" in t:
            continue
        if t.endswith("state asserted") or "leak detected" in t or "critical" in t:
            return True
    return False


def _sel_leak_events(bmc: Dict[str, Any]) -> List[Dict[str, Any]]:
    """SEL / Redfish log leak events still asserted (no later deassertion of the same sensor)."""
    active: Dict[str, Dict[str, Any]] = {}
    for ev in _of(bmc.get("sel"), list):
        if not isinstance(ev, dict):
            continue
        text = " ".join(_s(ev.get(k)) for k in ("sensor_type", "sensor", "event"))
        if not _LEAK_TEXT.search(text) or _NO_LEAK_TEXT.search(text):
            continue
        key = _s(ev.get("sensor")) or "sel"
        if _s(ev.get("direction")).lower() == "deasserted":
            active.pop(key, None)
        elif _s(ev.get("severity")).lower() in _CRIT_STATUS or "leak detected" in text.lower():
            active[key] = {"source": "sel", "name": key, "state": _s(ev.get("event")), "id": ev.get("id"),
                           "time": ev.get("time")}  # fmt: skip
    red = _of(bmc.get("redfish"), dict)
    for ev in _of(red.get("log_entries"), list):
        msg = _s(ev.get("message")) if isinstance(ev, dict) else ""
        if not msg or not _LEAK_TEXT.search(msg) or _NO_LEAK_TEXT.search(msg):
            continue
        key = _s(ev.get("sensor_type")) or "log"
        if ev.get("resolved") is True or _s(ev.get("entry_code")).lower() == "deassert":
            active.pop(key, None)
        elif _s(ev.get("severity")).lower() == "critical":
            active[key] = {"source": "redfish_log", "name": key, "state": _s(ev.get("message")), "id": ev.get("id"),
                           "time": ev.get("created")}  # fmt: skip
    return list(active.values())


def _redfish_detectors(red: Dict[str, Any], out: Dict[str, Any]) -> None:
    for d in _of(red.get("leak_detectors"), list):
        if not isinstance(d, dict):
            continue
        name = _s(d.get("name")) or _s(d.get("id")) or "leak detector"
        state = _s(d.get("state")) or _s(d.get("health"))
        bucket = {"critical": "asserted", "warning": "warnings", "ok": "readable"}.get(state.lower(), "unreadable")
        out[bucket].append({"source": "redfish", "name": name, "state": state or None})


def _ipmi_bucket(status: Any, states: List[Any]) -> str:
    if _s(status) in _CRIT_STATUS or _states_asserted(states):
        return "asserted"
    if _s(status) == "non_critical":
        return "warnings"
    return "unreadable" if _s(status) in _UNREADABLE_STATUS else "readable"


def _sensors(bmc: Dict[str, Any], out: Dict[str, Any]) -> None:
    """IPMI leak sensors (a sensor Redfish already reported is skipped) and coolant sensors (``cooling``)."""
    redfish_names = {e["name"] for k in ("asserted", "warnings", "readable", "unreadable") for e in out[k]}
    for s in _of(bmc.get("sensors"), list):
        if not isinstance(s, dict):
            continue
        if _s(s.get("type")) == "coolant" and _s(s.get("status")) in COOLING_LEVELS:
            out["cooling"].append({"source": _s(s.get("entity")) or "sensor", "name": _s(s.get("name")) or "coolant",
                                   "status": s.get("status"), "reading": s.get("reading"), "unit": s.get("unit")})  # fmt: skip
        if _s(s.get("type")) != "leak" or _s(s.get("name")) in redfish_names:
            continue
        states = _of(s.get("states"), list)
        entry = {"source": "ipmi", "name": _s(s.get("name")) or "leak sensor", "state": s.get("status"),
                 "states": [_s(x) for x in states]}  # fmt: skip
        out[_ipmi_bucket(s.get("status"), states)].append(entry)


def _names(entries: List[Dict[str, Any]]) -> str:
    return ", ".join(e["name"] for e in entries)


def _state_of(out: Dict[str, Any], errors: List[Dict[str, Any]]):
    """(state, reason) of the collected readings."""
    if out["asserted"]:
        return ASSERTED, "leak asserted: " + ", ".join("%s (%s)" % (e["name"], e.get("state")) for e in out["asserted"])
    if out["warnings"]:
        return WARNING, "leak warning: " + _names(out["warnings"])
    if out["readable"] and not out["unreadable"]:
        return CLEAR, "leak sensors read OK: " + _names(out["readable"])
    why = []
    if out["unreadable"]:
        why.append("unreadable: " + _names(out["unreadable"]))
    if not out["readable"] and not out["unreadable"]:
        why.append("no leak sensor found")
    if errors:
        why.append("BMC errors: " + "; ".join(_s(e.get("message"))[:120] for e in errors[:3]))
    return UNREADABLE, "; ".join(why)


def detect(bmc: Any) -> Dict[str, Any]:
    """Leak verdict from one node's ``bmc`` facts.

    Returns ``{state: asserted|warning|clear|unreadable, asserted: [...], warnings: [...], readable: [...],
    unreadable: [...], cooling: [...], reason}``. Only ``asserted`` fires a power-off; ``cooling`` lists the
    coolant sensors (flow, pressure, level, temperature) in Warning/Critical, which never do.
    """
    bmc = _of(bmc, dict)
    out: Dict[str, Any] = {"asserted": [], "warnings": [], "readable": [], "unreadable": [], "cooling": []}
    _redfish_detectors(_of(bmc.get("redfish"), dict), out)
    _sensors(bmc, out)
    out["asserted"].extend(_sel_leak_events(bmc))
    out["state"], out["reason"] = _state_of(out, [e for e in _of(bmc.get("errors"), list) if isinstance(e, dict)])
    return out


def domain_of(hostvars: Dict[str, Any]) -> Optional[str]:
    """A node's leak domain: ``gpuops_leak_domain`` (e.g. its CDU loop), else its rack, else None."""
    hv = _of(hostvars, dict)
    for key in ("gpuops_leak_domain", "gpuops_rack"):
        v = _s(hv.get(key))
        if v:
            return v
    return None


def scope(source: str, inventory: Dict[str, Any], requested: Optional[List[str]] = None) -> Dict[str, Any]:
    """Which nodes the response may power off.

    ``inventory`` maps host -> its vars (``gpuops_leak_domain`` / ``gpuops_rack``). The domain is the alarming
    node's; the default targets are every node of that domain. Requested targets outside it are refused
    (``out_of_scope``). A source without any domain scopes to the source alone.
    """
    inventory = _of(inventory, dict)
    domain = domain_of(inventory.get(source, {}))
    if domain is None:
        members = [source]
    else:
        members = sorted(h for h, hv in inventory.items() if domain_of(hv) == domain)
        if source not in members:
            members = sorted(members + [source])
    wanted = members if not requested else [_s(h) for h in requested]
    targets = [h for h in wanted if h in members]
    out_of_scope = [
        {"node": h, "domain": domain_of(inventory.get(h, {})), "reason": "outside leak domain %s" % domain}
        for h in wanted
        if h not in members
    ]
    return {"source": source, "domain": domain, "members": members, "targets": targets, "out_of_scope": out_of_scope}


def _finding(alert_id: str, host: Optional[str], severity: str, code: str, message: str, action: str) -> Dict[str, Any]:
    return {
        "id": "bmc.leak:%s:%s:%s" % (code, alert_id, host or "cluster"),
        "check": "bmc.leak",
        "code": code,
        "severity": severity,
        "host": host,
        "component": "leak",
        "message": message,
        "action": action,
        "alert_id": alert_id,
    }


def guard_findings(alert_id: str, reading: Dict[str, Any], targets: List[str], source: str) -> List[Dict[str, Any]]:
    """The corrective change class needs each target's own P0 finding: one per target of the leak domain."""
    if _of(reading, dict).get("state") != ASSERTED:
        return []
    return [
        _finding(
            alert_id,
            h,
            "P0",
            "asserted",
            "coolant leak at %s (%s)" % (source, reading.get("reason")),
            "emergency_shutdown",
        )  # fmt: skip
        for h in targets
    ]


def power_verdict(targets: List[str], power: Dict[str, Any]) -> Dict[str, Any]:
    """From per-node power results ``{host: {state: "off"|"on"|None, error: str|None, bmc: bool}}``.

    A node whose BMC did not answer (or has none) or that is not confirmed off is ``unconfirmed`` (P0).
    """
    off, unconfirmed = [], []
    power = _of(power, dict)
    for h in targets:
        r = _of(power.get(h), dict)
        state = _s(r.get("state")).lower()
        if state == "off":
            off.append(h)
        else:
            why = _s(r.get("error")) or (
                "no BMC configured" if r.get("bmc") is False else "power state %s" % (state or "unknown")
            )
            unconfirmed.append({"node": h, "reason": why})
    return {"powered_off": off, "unconfirmed": unconfirmed}


def result(alert_id: str, source: str, reading: Dict[str, Any], sc: Dict[str, Any], verdict: Optional[Dict[str, Any]],
           slurm_down: Optional[List[str]] = None) -> Dict[str, Any]:  # fmt: skip
    """The run result of one leak response (``leak_response_result``)."""
    reading = _of(reading, dict)
    sc = _of(sc, dict)
    findings: List[Dict[str, Any]] = []
    state = reading.get("state")
    if state == UNREADABLE:
        findings.append(_finding(alert_id, source, "P2", "sensor_unreadable",
                                 "leak sensor unreadable at %s: %s (nothing powered off)" % (source, reading.get("reason")),
                                 "inspect_bmc"))  # fmt: skip
    elif state == WARNING:
        findings.append(_finding(alert_id, source, "P1", "warning",
                                 "leak warning at %s: %s (no power-off: not asserted)" % (source, reading.get("reason")),
                                 "isolate"))  # fmt: skip
    elif state == ASSERTED:
        findings.extend(guard_findings(alert_id, reading, _of(sc.get("targets"), list), source))
    for c in _of(reading.get("cooling"), list):
        level, sev, action = COOLING_LEVELS.get(_s(c.get("status")), ("Warning", "P2", "monitor"))
        f = _finding(alert_id, source, sev, level,
                     "coolant sensor %s at %s: %s (reading %s %s) - a cooling fault, not a leak: nothing powered off"
                     % (c.get("name"), source, c.get("status"), c.get("reading"), c.get("unit") or ""), action)  # fmt: skip
        f.update(id="bmc.coolant:%s:%s:%s:%s" % (level, alert_id, source, c.get("name")), check="bmc.coolant",
                 component="bmc/%s" % c.get("name"))  # fmt: skip
        findings.append(f)
    for o in _of(sc.get("out_of_scope"), list):
        findings.append(_finding(alert_id, o.get("node"), "P3", "out_of_scope", "not powered off: %s" % o.get("reason"),
                                 "none"))  # fmt: skip
    v = _of(verdict, dict)
    for u in _of(v.get("unconfirmed"), list):
        findings.append(_finding(alert_id, u.get("node"), "P0", "power_off_unconfirmed",
                                 "power-off unconfirmed for %s: %s" % (u.get("node"), u.get("reason")),
                                 "manual_power_off"))  # fmt: skip
    fired = state == ASSERTED
    return {
        "alert_id": alert_id,
        "source": source,
        "reading": reading,
        "fired": fired,
        "domain": sc.get("domain"),
        "targets": _of(sc.get("targets"), list) if fired else [],
        "out_of_scope": _of(sc.get("out_of_scope"), list),
        "slurm_down": _of(slurm_down, list),
        "powered_off": _of(v.get("powered_off"), list),
        "unconfirmed": _of(v.get("unconfirmed"), list),
        "findings": findings,
        "severity": min((f["severity"] for f in findings), default=None),
    }


def assess(req: Dict[str, Any]) -> Dict[str, Any]:
    """One call for the role: the reading (``detect``), the scope and the guard findings."""
    inventory = _of(req.get("inventory"), dict)
    for key, var in (("racks", "gpuops_rack"), ("domains", "gpuops_leak_domain")):
        for host, value in _of(req.get(key), dict).items():
            inventory.setdefault(host, {})[var] = value
    source = _s(req.get("source"))
    reading = detect(req.get("bmc"))
    sc = scope(source, inventory, _of(req.get("requested"), list) or None)
    findings = guard_findings(_s(req.get("alert_id")), reading, sc["targets"], source)
    return {"reading": reading, "scope": sc, "guard_findings": findings}


def _target_outcome(host: str, res: Dict[str, Any], power: Dict[str, Any]) -> Dict[str, Any]:
    slurm = "DOWN" if host in _of(res.get("slurm_down"), list) else None
    out: Dict[str, Any] = {"decision": "leak asserted: power off the leak domain", "slurm_state": slurm}
    if host in _of(res.get("powered_off"), list):
        out.update(outcome="done", detail="powered off (confirmed by its BMC)")
        return out
    why = next((u.get("reason") for u in _of(res.get("unconfirmed"), list) if u.get("node") == host), "not powered off")
    state = _s(_of(power.get(host), dict).get("state")).lower()
    # the BMC read back a state other than off: the power-off failed; no reading: its effect is unconfirmed
    out.update(outcome="failed" if state else "unconfirmed", detail="power-off %s: %s" % (
        "failed" if state else "unconfirmed", why), error=_s(_of(power.get(host), dict).get("error")) or None)  # fmt: skip
    return out


def outcomes(res: Dict[str, Any], power: Any = None) -> Dict[str, Any]:
    """``(status, decision, nodes)`` of a run result in the run-outcome vocabulary (docs/leak.md): an unreadable
    sensor or a warning is ``refused`` for the source (nothing powered off), a clear reading ``skipped``; after an
    asserted leak each target is ``done`` (confirmed off), ``failed`` (read back on) or ``unconfirmed`` (no
    reading); requested nodes outside the leak domain are ``refused``."""
    reading = _of(res.get("reading"), dict)
    state, source = reading.get("state"), _s(res.get("source"))
    nodes: Dict[str, Dict[str, Any]] = {}
    if not res.get("fired"):
        why = _s(reading.get("reason")) or _s(state)
        if state == CLEAR:
            nodes[source] = {"outcome": "skipped", "detail": "no leak: %s" % why, "decision": "clear: no action"}
            status = "no_action"
        else:
            what = "leak sensor unreadable" if state == UNREADABLE else "leak warning, not asserted"
            nodes[source] = {"outcome": "refused", "detail": "%s: %s; nothing powered off" % (what, why),
                             "decision": "refused: %s" % what}  # fmt: skip
            status = "refused"
    else:
        for host in _of(res.get("targets"), list):
            nodes[host] = _target_outcome(host, res, _of(power, dict))
        bad = [h for h, n in nodes.items() if n["outcome"] != "done"]
        status = "incomplete" if bad else "done"
    for o in _of(res.get("out_of_scope"), list):
        if isinstance(o, dict) and o.get("node"):
            nodes[_s(o["node"])] = {"outcome": "refused", "detail": "not powered off: %s" % o.get("reason"),
                                    "decision": "refused: outside the leak domain"}  # fmt: skip
    decision = {"no_action": "no leak asserted: nothing done", "refused": "nothing powered off: %s" % (
        _s(reading.get("reason")) or state), "done": "leak domain powered off",
        "incomplete": "power-off not confirmed on %d node(s)" % (len(nodes) - sum(
            n["outcome"] == "done" for n in nodes.values()))}[status]  # fmt: skip
    return status, decision, nodes


def finish(req: Dict[str, Any]) -> Dict[str, Any]:
    """One call for the role: the power verdict (after an asserted leak) and the run result, with its final
    ``status`` (done, incomplete, refused, no_action), ``decision``, ``ticket`` and per-node ``outcomes``."""
    reading, sc = _of(req.get("reading"), dict), _of(req.get("scope"), dict)
    verdict = None
    if reading.get("state") == ASSERTED and isinstance(req.get("power"), dict):
        verdict = power_verdict(_of(sc.get("targets"), list), _of(req.get("power"), dict))
    res = result(_s(req.get("alert_id")), _s(req.get("source")), reading, sc, verdict, _of(req.get("slurm_down"), list))
    res["status"], res["decision"], res["outcomes"] = outcomes(res, req.get("power"))
    res["ticket"] = _s(req.get("ticket")) or res["alert_id"]
    return res


def result_path(state_dir: str, alert_id: str) -> str:
    """``<state_dir>/leak/<alert id>.json`` (characters outside ``A-Za-z0-9_.@:+-`` become ``_``)."""
    return os.path.join(state_dir, "leak", re.sub(r"[^A-Za-z0-9_.@:+-]", "_", alert_id) + ".json")


def load_result(path: str) -> Optional[Dict[str, Any]]:
    """The result written before at ``path`` (None when there is none or it does not parse)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = _safejson.loads(fh.read(), what="the leak result")
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def save_result(path: str, res: Dict[str, Any]) -> None:
    """0600 in a 0700 directory whatever the umask; replaced atomically, never written through a link."""
    write_private_atomic(path, json.dumps(res, indent=1, sort_keys=True) + "\n")
