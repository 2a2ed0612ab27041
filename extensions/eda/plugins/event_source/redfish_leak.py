# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.redfish_leak: an ansible-rulebook event source that polls the BMCs' Redfish leak detectors and
puts an event on the queue when a detector changes state (a coolant leak going Critical above all).

Between two inspections (15 minutes) nothing else reads the leak detectors; the operations contract asks a
leak to cut power immediately. This source reads, every ``interval`` seconds, each chassis's
``ThermalSubsystem/LeakDetection/LeakDetectors/<id>`` (DMTF Redfish 2023.1+: ``LeakDetector.DetectorState``, a
``Resource.Health``: OK, Warning, Critical; ``Status.Health`` when a BMC has no DetectorState) and emits, on every
change of a detector's state (the first reading counts as a change from "unknown")::

  leak_event.node         the inventory host the BMC serves (from the targets file, validated: never the BMC's text)
  leak_event.chassis      the chassis id, leak_event.detector the detector id ([A-Za-z0-9._-], else a hash)
  leak_event.state        OK | Warning | Critical (anything else a BMC says: Unknown)
  leak_event.previous     the state before (Unknown at start)
  leak_event.ticket       leak-<16 hex>: sha256 of the BMC, detector and the onset time (one id per leak)
  leak_event.detected_at  when this source read the new state (ISO 8601 UTC)

Nothing else a BMC returns reaches the event; credentials never do. Which BMC serves which node comes from the
targets file (JSON), written by the operator (or the test bed), never from event data::

  {"targets": [{"node": "gpu-node-07", "bmc": "https://10.0.7.1", "system": "<ComputerSystem id>",
                "user": "...", "password_file": "/etc/gpuops/bmc-password", "validate_certs": true}]}

``node`` must fully match a host name pattern (not all/ungrouped/localhost), ``bmc`` is an https (or http with
``allow_http``) origin without user info, path or query, ``system`` an id; ``user``/``password_file``/
``validate_certs``/``ca_path`` default to the source's options. With ``system`` the chassis are that system's
``Links.Chassis``; without, every chassis of the BMC. Nodes that share a chassis (one BMC, several systems) share
its detectors: one event per detector change, naming the first such node. A BMC that cannot be read leaves its
detectors' states as they were (a leak is never inferred, nor cleared, from silence) and is logged. Logs in with a
Redfish session where the BMC offers one (one login, then the token; Basic auth otherwise) and logs out on stop.

Stdlib only (urllib, threads); the rulebook's asyncio loop is never blocked by a slow BMC.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import datetime
import hashlib
import http.client
import ipaddress
import json
import logging
import re
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, List, Optional, Tuple

DOCUMENTATION = r"""
---
short_description: Poll Redfish leak detectors, emit an event when one changes state.
description:
  - An ansible-rulebook event source. Every I(interval) seconds it reads the leak detectors of the chassis of the
    BMCs listed in I(targets_file) and puts one event per detector state change on the queue (see the module
    docstring); a rule acts on C(event.leak_event.state == "Critical").
options:
  targets_file:
    description:
      - JSON file C({"targets": [{"node", "bmc", "system", "user", "password_file", "validate_certs", "ca_path"}]}).
      - Empty or unset, the source idles (logs once, emits nothing): a rulebook without leak detectors still runs.
    type: str
  user:
    description: Default BMC user of the targets.
    type: str
  password_file:
    description: Default file holding the BMC password (first line); never an event field.
    type: str
  validate_certs:
    description: Verify the BMCs' TLS certificates (default of the targets).
    type: bool
    default: true
  ca_path:
    description: CA bundle to verify the BMCs' certificates with.
    type: str
  interval:
    description: Seconds between two polls of every detector (0.5-300).
    type: float
    default: 2
  timeout:
    description: Seconds one Redfish request may take (0.5-60).
    type: float
    default: 3
  rediscover:
    description: Seconds after which the chassis and detectors of a BMC are walked again (also after any error).
    type: float
    default: 300
  allow_http:
    description: Accept http:// BMC origins (test beds); the password then crosses the network in clear.
    type: bool
    default: false
"""

EXAMPLES = r"""
- gpuops.cluster.redfish_leak:
    targets_file: "{{ GPUOPS_LEAK_TARGETS | default('') }}"
    user: "{{ GPUOPS_BMC_USER | default('') }}"
    password_file: "{{ GPUOPS_BMC_PASSWORD_FILE | default('') }}"
    interval: 2
"""

logger = logging.getLogger(__name__)

NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
RESERVED = ("all", "ungrouped", "localhost")
ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
ODATA = re.compile(r"/redfish/v1/[A-Za-z0-9._~%/-]{1,400}")
HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*")
STATES = ("OK", "Warning", "Critical")
MAX_DOC = 1024 * 1024
MAX_TARGETS = 10000
MAX_DETECTORS = 64  # per chassis


class Refused(ValueError):
    """An option or a target that cannot be used (the message says which)."""


# ------------------------------------------------------------------------------------------------------------
# options and targets (pure)


def _num(args: Dict[str, Any], key: str, default: float, low: float, high: float) -> float:
    value = args.get(key)
    if value is None or value == "":
        return default
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise Refused("%s must be a number, got %r" % (key, value)) from None
    if not low <= out <= high:
        raise Refused("%s must be in [%g, %g], got %g" % (key, low, high, out))
    return out


def _bool(value: Any, default: bool) -> bool:
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1", "on"):
        return True
    if text in ("false", "no", "0", "off"):
        return False
    raise Refused("not a boolean: %r" % (value,))


def check_args(args: Dict[str, Any]) -> Dict[str, Any]:
    """The source's options, validated (Refused with the reason otherwise)."""
    if not isinstance(args, dict):
        raise Refused("the source's arguments must be a mapping")
    return {
        "targets_file": str(args.get("targets_file") or ""),
        "user": str(args.get("user") or ""),
        "password_file": str(args.get("password_file") or ""),
        "validate_certs": _bool(args.get("validate_certs"), True),
        "ca_path": str(args.get("ca_path") or ""),
        "interval": _num(args, "interval", 2.0, 0.5, 300.0),
        "timeout": _num(args, "timeout", 3.0, 0.5, 60.0),
        "rediscover": _num(args, "rediscover", 300.0, 10.0, 86400.0),
        "allow_http": _bool(args.get("allow_http"), False),
    }


def check_origin(text: Any, allow_http: bool) -> str:
    """``scheme://host[:port]`` of a BMC, validated with full matches; Refused otherwise."""
    if not isinstance(text, str) or len(text) > 300:
        raise Refused("bmc must be a URL string")
    u = urllib.parse.urlsplit(text.strip())
    if u.scheme not in (("https", "http") if allow_http else ("https",)):
        raise Refused("bmc %r: scheme must be https%s" % (text, " or http" if allow_http else ""))
    if u.username or u.password or u.path not in ("", "/") or u.query or u.fragment:
        raise Refused("bmc %r: an origin only (no user info, path, query or fragment)" % text)
    host = u.hostname or ""
    try:
        ip = ipaddress.ip_address(host)
        host = "[%s]" % ip if ip.version == 6 else str(ip)
    except ValueError:
        if not HOST.fullmatch(host):
            raise Refused("bmc %r: not a host name or address" % text) from None
    try:
        port = u.port
    except ValueError:
        raise Refused("bmc %r: bad port" % text) from None
    return "%s://%s%s" % (u.scheme, host, ":%d" % port if port else "")


def check_targets(doc: Any, opts: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The targets of the file's document, validated; Refused names the first bad entry."""
    targets = doc.get("targets") if isinstance(doc, dict) else doc
    if not isinstance(targets, list) or len(targets) > MAX_TARGETS:
        raise Refused("the targets file must hold a list of at most %d targets" % MAX_TARGETS)
    out, seen = [], set()
    for i, t in enumerate(targets):
        if not isinstance(t, dict):
            raise Refused("target %d is not a mapping" % i)
        node = t.get("node")
        if not isinstance(node, str) or not NODE.fullmatch(node) or node.lower() in RESERVED:
            raise Refused("target %d: node %r is not a host name" % (i, node))
        if node in seen:
            raise Refused("target %d: node %s listed twice" % (i, node))
        seen.add(node)
        system = t.get("system")
        if system is not None and not (isinstance(system, str) and ID.fullmatch(system)):
            raise Refused("target %d (%s): system %r is not an id" % (i, node, system))
        out.append(
            {
                "node": node,
                "bmc": check_origin(t.get("bmc"), opts["allow_http"]),
                "system": system,
                "user": str(t.get("user") or opts["user"]),
                "password_file": str(t.get("password_file") or opts["password_file"]),
                "validate_certs": _bool(t.get("validate_certs"), opts["validate_certs"]),
                "ca_path": str(t.get("ca_path") or opts["ca_path"]),
            }
        )
    return out


def load_targets(opts: Dict[str, Any]) -> List[Dict[str, Any]]:
    path = opts["targets_file"]
    if not path:
        return []
    with open(path, "rb") as fh:
        raw = fh.read(MAX_DOC + 1)
    if len(raw) > MAX_DOC:
        raise Refused("targets file %s is larger than %d bytes" % (path, MAX_DOC))
    try:
        doc = json.loads(raw.decode("utf-8"))
    except ValueError as exc:
        raise Refused("targets file %s is not JSON: %s" % (path, exc)) from None
    return check_targets(doc, opts)


def detector_state(doc: Any) -> str:
    """A LeakDetector's state: DetectorState, else Status.Health; Unknown when neither is a Health value."""
    if not isinstance(doc, dict):
        return "Unknown"
    state = doc.get("DetectorState")
    if state is None:
        state = (doc.get("Status") or {}).get("Health") if isinstance(doc.get("Status"), dict) else None
    norm = {v.lower(): v for v in STATES}.get(state.strip().lower()) if isinstance(state, str) else None
    return norm or "Unknown"  # some BMCs write "critical" (a Health value in any case)


def safe_id(text: Any) -> str:
    """An id for the event: the resource's id when it is plain, else a hash of it."""
    s = str(text or "")
    return s if ID.fullmatch(s) else "h" + hashlib.sha256(s.encode("utf-8", "replace")).hexdigest()[:16]


def ticket(bmc: str, detector: str, onset: float) -> str:
    key = "%s|%s|%.3f" % (bmc, detector, onset)
    return "leak-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def _iso(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def transition(
    key: Tuple[str, str], node: str, chassis: str, detector: str, state: str, known: Dict[Tuple[str, str], Any],
    now: float,
) -> Optional[Dict[str, Any]]:  # fmt: skip
    """The event of a detector reading (None when its state did not change); updates ``known``. Pure but for
    ``known``. ``Unknown`` readings keep the last known state (silence is neither a leak nor its end)."""
    if state == "Unknown":
        return None
    prev = known.get(key)
    before = prev["state"] if prev else "Unknown"
    if before == state:
        return None
    if prev is None and state == "OK":  # the first reading, dry: known, nothing to say
        known[key] = {"state": state, "onset": now}
        return None
    onset = now if state != "OK" else (prev["onset"] if prev else now)
    known[key] = {"state": state, "onset": onset}
    return {
        "leak_event": {
            "node": node,
            "chassis": chassis,
            "detector": detector,
            "state": state,
            "previous": before,
            "ticket": ticket(key[0], key[1], onset),
            "detected_at": _iso(now),
        },
        # ansible-rulebook adds meta.source {name, type}, received_at and uuid itself
    }


# ------------------------------------------------------------------------------------------------------------
# Redfish (blocking, run in threads)


class Bmc:
    """One BMC origin with its credentials: a session when offered, Basic auth otherwise."""

    def __init__(self, t: Dict[str, Any], timeout: float):
        self.origin, self.user, self.timeout = t["bmc"], t["user"], timeout
        self.password = ""
        if t["password_file"]:
            with open(t["password_file"], encoding="utf-8") as fh:
                self.password = fh.readline().rstrip("\r\n")
        if t["validate_certs"]:
            self.ctx = ssl.create_default_context(cafile=t["ca_path"] or None)
        else:
            self.ctx = ssl.create_default_context()
            self.ctx.check_hostname, self.ctx.verify_mode = False, ssl.CERT_NONE
        self.token: Optional[str] = None
        self.session: Optional[str] = None
        self.basic = False
        self.detectors: List[Tuple[str, str, str]] = []  # (odata id, chassis id, detector id)
        self.walked = 0.0

    def _open(self, method: str, path: str, body: Optional[bytes] = None, auth: bool = True):
        if not ODATA.fullmatch(path) or "/.." in path:
            raise Refused("refused Redfish path %r" % path[:80])
        req = urllib.request.Request(self.origin + path, data=body, method=method)
        req.add_header("Accept", "application/json")
        if body is not None:
            req.add_header("Content-Type", "application/json")
        if auth and self.token:
            req.add_header("X-Auth-Token", self.token)
        elif auth and self.user:
            cred = base64.b64encode(("%s:%s" % (self.user, self.password)).encode()).decode()
            req.add_header("Authorization", "Basic " + cred)
        return urllib.request.urlopen(req, timeout=self.timeout, context=self.ctx)  # noqa: S310 - https origin

    def login(self) -> None:
        if self.token or self.basic or not self.user:
            return
        body = json.dumps({"UserName": self.user, "Password": self.password}).encode()
        try:
            with self._open("POST", "/redfish/v1/SessionService/Sessions", body, auth=False) as r:
                self.token = r.headers.get("X-Auth-Token")
                loc = urllib.parse.urlsplit(r.headers.get("Location") or "").path
                self.session = loc if ODATA.fullmatch(loc) else None
        except urllib.error.HTTPError as exc:
            if exc.code in (404, 405, 501):
                self.basic = True  # no SessionService: Basic auth on every request
                return
            raise
        if not self.token:
            self.basic = True

    def get(self, path: str) -> Dict[str, Any]:
        self.login()
        try:
            with self._open("GET", path) as r:
                raw = r.read(MAX_DOC + 1)
        except urllib.error.HTTPError as exc:
            if exc.code == 401 and self.token:  # the session expired: log in again once
                self.token = None
                self.login()
                with self._open("GET", path) as r:
                    raw = r.read(MAX_DOC + 1)
            else:
                raise
        if len(raw) > MAX_DOC:
            raise Refused("%s: document larger than %d bytes" % (path, MAX_DOC))
        doc = json.loads(raw.decode("utf-8"))
        if not isinstance(doc, dict):
            raise Refused("%s: not a JSON object" % path)
        return doc

    def logout(self) -> None:
        if self.token and self.session:
            try:
                self._open("DELETE", self.session).close()
            except (OSError, ValueError):
                pass
        self.token = self.session = None

    def walk(self, systems: List[Optional[str]]) -> None:
        """Find the leak detectors of the chassis of ``systems`` (None: every chassis)."""
        chassis: List[str] = []
        for system in systems:
            if system is None:
                members = self.get("/redfish/v1/Chassis").get("Members") or []
            else:
                links = self.get("/redfish/v1/Systems/%s" % system).get("Links")
                members = links.get("Chassis") if isinstance(links, dict) else None
            for m in members if isinstance(members, list) else []:
                ref = m.get("@odata.id") if isinstance(m, dict) else None
                if isinstance(ref, str) and ODATA.fullmatch(ref) and ref not in chassis:
                    chassis.append(ref)
        found = []
        for ref in chassis:
            doc = self.get(ref)
            ts = _link(doc, "ThermalSubsystem")
            leak = _link(self.get(ts), "LeakDetection") if ts else None
            dets = _link(self.get(leak), "LeakDetectors") if leak else None
            if not dets:
                continue
            members = self.get(dets).get("Members")
            for m in (members if isinstance(members, list) else [])[:MAX_DETECTORS]:
                det = m.get("@odata.id") if isinstance(m, dict) else None
                if isinstance(det, str) and ODATA.fullmatch(det):
                    found.append(
                        (det, safe_id(doc.get("Id") or ref.rsplit("/", 1)[-1]), safe_id(det.rsplit("/", 1)[-1]))
                    )
        self.detectors = found
        self.walked = time.monotonic()

    def read(self) -> List[Tuple[str, str, str, str]]:
        """(odata id, chassis, detector, state) of every known detector; a detector that cannot be read: Unknown."""
        out = []
        for det, chassis, name in self.detectors:
            try:
                state = detector_state(self.get(det))
            except (OSError, ValueError, http.client.HTTPException) as exc:
                logger.warning("gpuops.cluster.redfish_leak: %s%s unreadable: %s", self.origin, det, exc)
                state = "Unknown"
            out.append((det, chassis, name, state))
        return out


def _link(doc: Dict[str, Any], key: str) -> Optional[str]:
    ref = doc.get(key)
    ref = ref.get("@odata.id") if isinstance(ref, dict) else None
    return ref if isinstance(ref, str) and ODATA.fullmatch(ref) else None


def _bmc_key(t: Dict[str, Any]) -> Tuple[str, str, str]:
    return (t["bmc"], t["user"], t["password_file"])


def poll_once(bmc: Bmc, nodes: List[str], systems: List[Optional[str]], rediscover: float) -> List[Tuple[str, ...]]:
    """One poll of one BMC (blocking): walked again when due or when nothing is known yet."""
    if not bmc.detectors or time.monotonic() - bmc.walked > rediscover:
        bmc.walk(systems)
    return [(bmc.origin, nodes[0]) + r for r in bmc.read()]


async def main(queue: asyncio.Queue, args: Dict[str, Any]) -> None:
    """Poll until cancelled."""
    opts = check_args(args)
    targets = load_targets(opts)
    if not targets:
        logger.warning("gpuops.cluster.redfish_leak: no targets_file (or no targets): not polling any BMC")
        await asyncio.Event().wait()
        return
    groups: Dict[Tuple[str, str, str], Dict[str, Any]] = {}
    for t in sorted(targets, key=lambda x: x["node"]):
        g = groups.setdefault(_bmc_key(t), {"bmc": Bmc(t, opts["timeout"]), "nodes": [], "systems": []})
        g["nodes"].append(t["node"])
        if t["system"] not in g["systems"]:
            g["systems"].append(t["system"])
    logger.info("gpuops.cluster.redfish_leak: polling %d BMC(s) of %d node(s) every %g s",
                len(groups), len(targets), opts["interval"])  # fmt: skip
    known: Dict[Tuple[str, str], Any] = {}
    failing: Dict[str, str] = {}
    loop = asyncio.get_running_loop()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=min(16, len(groups)), thread_name_prefix="redfish-leak")
    try:
        while True:
            started = time.monotonic()
            jobs = {
                origin: loop.run_in_executor(pool, poll_once, g["bmc"], g["nodes"], g["systems"], opts["rediscover"])
                for origin, g in groups.items()
            }
            for origin, job in jobs.items():
                try:
                    readings = await job
                except Exception as exc:  # noqa: BLE001 - unreachable, TLS, HTTP, bad JSON: logged, the source lives on
                    groups[origin]["bmc"].detectors = []  # walk again next time
                    if failing.get(origin[0]) != str(exc):
                        logger.warning("gpuops.cluster.redfish_leak: BMC %s not read: %s", origin[0], exc)
                    failing[origin[0]] = str(exc)
                    continue
                failing.pop(origin[0], None)
                now = time.time()
                for bmc_origin, node, det, chassis, name, state in readings:
                    event = transition((bmc_origin, det), node, chassis, name, state, known, now)
                    if event is not None:
                        logger.info("gpuops.cluster.redfish_leak: %s %s/%s %s -> %s", node, chassis, name,
                                    event["leak_event"]["previous"], state)  # fmt: skip
                        await queue.put(event)
            await asyncio.sleep(max(0.0, opts["interval"] - (time.monotonic() - started)))
    finally:
        for g in groups.values():
            g["bmc"].logout()
        pool.shutdown(wait=False)


if __name__ == "__main__":  # pragma: no cover - manual run: python redfish_leak.py targets.json

    class _Print(asyncio.Queue):
        async def put(self, item: Any) -> None:
            print(json.dumps(item))  # noqa: T201

    import sys

    logging.basicConfig(level=logging.INFO)
    asyncio.run(main(_Print(), {"targets_file": sys.argv[1], "validate_certs": False, "allow_http": True}))
