# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``bmc`` fact domain (docs/facts.md): sensors, SEL, FRU, MC info and Redfish inventory.

``collect()`` reads a capture directory, the local BMC in-band (``ipmitool`` over /dev/ipmi0), a remote BMC
over IPMI LAN (``ipmitool -I lanplus -C 3``, password through the environment, never on the command line)
or a remote BMC over Redfish (``_http.Http``). Parsing is in ``_ipmi`` and ``_redfish``.

Runs on managed nodes (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import capture as _capture
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import ipmi as _ipmi, redfish as _redfish
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, error_record, internal_error
from ansible_collections.gpuops.cluster.plugins.module_utils._files import read_text
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command, which

DOMAIN = "bmc"
MODES = ("inband", "ipmi_lan", "redfish")

#: capture file -> (ipmitool arguments, parser, result key)
IPMI_FILES: Tuple[Tuple[str, List[str], str], ...] = (
    ("ipmitool-sdr.txt", ["sdr", "elist"], "sensors"),
    ("ipmitool-sel.txt", ["sel", "elist"], "sel"),
    ("ipmitool-mc-info.txt", ["mc", "info"], "mc"),
    ("ipmitool-fru.txt", ["fru", "print"], "fru"),
    ("ipmitool-sel-info.txt", ["sel", "info"], "sel_info"),
)

_PARSERS: Dict[str, Callable[[str, Optional[str]], Any]] = {
    "sensors": _ipmi.parse_sdr,
    "sel": _ipmi.parse_sel,
    "mc": _ipmi.parse_mc_info,
    "fru": _ipmi.parse_fru,
    "sel_info": _ipmi.parse_sel_info,
}

#: Limits of one Redfish walk: documents, log entries, and wall time in multiples of the per-request timeout.
MAX_DOCS = 3000
MAX_LOG_ENTRIES = 2000
WALK_TIMEOUTS = 10

#: ``subset`` of a Redfish read -> the parts of the result that subset does not read (``not_read`` of the result).
#: ``leak``: only Chassis -> ThermalSubsystem -> LeakDetection -> LeakDetectors (the leak verdict of
#: ``gpuops.cluster.leak_assess``; no Sensor ReadingType is a leak, see ``_redfish``).
SUBSETS: Dict[str, List[str]] = {
    "leak": [
        "sensors:non_leak",
        "sel",
        "sel_info",
        "fru",
        "mc",
        "redfish.systems",
        "redfish.firmware",
        "redfish.managers",
        "redfish.psus",
        "redfish.memory",
        "redfish.log_entries",
    ],
}


def _http() -> Any:
    """The HTTP client module, imported for a Redfish walk only: it pulls in ansible.module_utils.urls, ssl and
    email (~60 ms of start-up on a node), which an in-band or IPMI-over-LAN collection never needs."""
    from ansible_collections.gpuops.cluster.plugins.module_utils import _http as http_module

    return http_module


def empty_result(source: Optional[str] = None) -> Dict[str, Any]:
    red = _redfish.empty()
    sensors = red.pop("sensors")
    return {
        "source": source,
        "sensors": sensors,
        "sel": [],
        "fru": [],
        "mc": {},
        "sel_info": {},
        "redfish": red,
        "errors": [],
    }


#: Parsers that take an ``errors`` list: a malformed record there costs that record, not the listing.
_RECORD_PARSERS = ("sensors", "sel", "fru")


def _apply(result: Dict[str, Any], key: str, text: str, source: str) -> None:
    """Parse one ipmitool listing into ``result``. Whatever one listing does wrong (a malformed record, a
    truncation, a parser bug) is an error record next to what it did parse; the other listings are untouched."""
    try:
        if key in _RECORD_PARSERS:
            value = _PARSERS[key](text, source, result["errors"])  # type: ignore[call-arg]
        else:
            value = _PARSERS[key](text, source)
    except ParseError as exc:
        if exc.source is None:
            exc.source = source
        result["errors"].append(exc.to_error(DOMAIN))
        value = exc.partial
        if value is None:
            return
    except Exception as exc:  # noqa: BLE001 - one listing's parser bug must not cost the bmc domain
        msg = "%s: %s" % (type(exc).__name__, exc)
        result["errors"].append(error_record(DOMAIN, "internal", msg[:300], source, "ipmitool_" + key))
        return
    if isinstance(value, list):
        result[key].extend(value)
    elif isinstance(value, dict):
        result[key] = value


def _merge_redfish(result: Dict[str, Any], frag: Dict[str, Any]) -> None:
    for k, v in frag.items():
        if k == "sensors":
            result["sensors"].extend(v)
        else:
            result["redfish"].setdefault(k, []).extend(v)


# ------------------------------------------------------------------------------------------ capture


def _capture_ipmi(result: Dict[str, Any], capture_dir: str, meta: Dict[str, Any]) -> bool:
    """The ipmitool listings of a capture into ``result``; True when any file was there."""
    found = False
    for name, _args, key in IPMI_FILES:
        path = _capture.path(capture_dir, name)
        status = _capture.file_status(meta, name)
        try:
            text = read_text(path)
        except ParseError as exc:
            result["errors"].append(exc.to_error(DOMAIN, "unreadable"))
            continue
        if status.get("timed_out"):
            result["errors"].append(error_record(DOMAIN, "timeout", "%s timed out at capture" % name, path))
        elif status.get("rc") not in (None, 0) and not (text or "").strip():
            msg = "%s: exit %s: %s" % (name, status.get("rc"), str(status.get("stderr") or "").strip()[-300:])
            result["errors"].append(error_record(DOMAIN, "tool_error", msg, path))
        if text is None:
            continue
        found = True
        _apply(result, key, text, path)
    return found


def _capture_redfish_file(result: Dict[str, Any], path: str) -> None:
    try:
        text = read_text(path)
    except ParseError as exc:
        result["errors"].append(exc.to_error(DOMAIN, "unreadable"))
        return
    if text is None:
        return
    try:
        doc = _safejson.loads(text, what=os.path.basename(path))
    except ValueError as exc:  # not JSON, or over the budget (_safejson: nested too deep, too large)
        msg = str(exc) if isinstance(exc, _safejson.JsonBudgetError) else "invalid JSON: %s" % exc
        result["errors"].append(error_record(DOMAIN, "parse", msg, path, "redfish"))
        return
    for d in doc if isinstance(doc, list) else [doc]:
        try:
            _merge_redfish(result, _redfish.parse_document(d, path, result["errors"]))
        except ParseError as exc:
            result["errors"].append(exc.to_error(DOMAIN))


def _capture_redfish(result: Dict[str, Any], capture_dir: str) -> bool:
    """The Redfish documents of a capture into ``result``; True when any ``redfish/*.json`` was there."""
    try:  # redfish/ must be a real directory of the capture: a link is refused, never followed
        rnames = _capture.list_dir(capture_dir, _capture.REDFISH_DIR)
    except ParseError as exc:
        result["errors"].append(exc.to_error(DOMAIN))
        return False
    rdir = _capture.path(capture_dir, _capture.REDFISH_DIR)
    found = False
    for fname in rnames or ():
        if fname.endswith(".json"):
            found = True
            _capture_redfish_file(result, os.path.join(rdir, fname))
    return found


def collect_capture(capture_dir: str) -> Dict[str, Any]:
    result = empty_result("capture")
    meta = _capture.meta_or_error(capture_dir, result["errors"], DOMAIN)
    found = _capture_ipmi(result, capture_dir, meta)
    if not _capture_redfish(result, capture_dir) and not found:
        result["source"] = None
    return result


# ------------------------------------------------------------------------------------------ ipmitool


def ipmitool_argv(
    mode: str,
    ipmitool_path: str = "ipmitool",
    host: Optional[str] = None,
    user: Optional[str] = None,
    port: Optional[int] = None,
) -> List[str]:
    """The ipmitool prefix for a mode. The password is never part of it (``-E`` reads IPMI_PASSWORD)."""
    argv = [ipmitool_path]
    if mode == "ipmi_lan":
        argv += ["-I", "lanplus", "-C", "3", "-H", str(host)]
        if port:
            argv += ["-p", str(int(port))]
        if user is not None:
            argv += ["-U", str(user)]
        argv += ["-E"]
    return argv


def _tool_error_kind(stdout: str, stderr: str) -> str:
    text = (stdout + "\n" + stderr).lower()
    if "could not open device" in text or "no such file or directory" in text:
        return "missing"
    return "tool_error"


def collect_ipmitool(
    mode: str,
    host: Optional[str],
    user: Optional[str],
    password: Optional[str],
    port: Optional[int],
    timeout: float,
    ipmitool_path: str,
) -> Dict[str, Any]:
    result = empty_result("ipmitool")
    exe = ipmitool_path if os.path.sep in ipmitool_path else (which(ipmitool_path) or None)
    if not exe or not os.path.exists(exe):
        result["source"] = None
        result["errors"].append(error_record(DOMAIN, "missing", "ipmitool not found: %s" % ipmitool_path))
        return result
    prefix = ipmitool_argv(mode, exe, host, user, port)
    env = {"IPMI_PASSWORD": password or ""} if mode == "ipmi_lan" else None
    for _name, args, key in IPMI_FILES:
        res = run_command(prefix + args, timeout=timeout, env=env)
        src = "ipmitool " + " ".join(args)
        if res.timed_out:
            result["errors"].append(error_record(DOMAIN, "timeout", res.describe(), src))
            if key == "sensors":
                break  # an unreachable BMC: do not wait once per command
            continue
        if res.error or (res.rc != 0 and not res.stdout.strip()):
            kind = "missing" if res.error else _tool_error_kind(res.stdout, res.stderr)
            result["errors"].append(error_record(DOMAIN, kind, res.describe(), src))
            if key == "sensors" and mode == "ipmi_lan":
                break
            continue
        _apply(result, key, res.stdout, src)
    return result


# ------------------------------------------------------------------------------------------ redfish


class _Walker:
    def __init__(self, http: Any, result: Dict[str, Any], budget_s: float = 300.0) -> None:
        self.http = http
        self.result = result
        self.docs = 0
        self.seen: set = set()
        self.deadline = time.monotonic() + budget_s
        self.out_of_time = False

    def _stop(self) -> bool:
        if self.docs >= MAX_DOCS:
            return True
        if time.monotonic() >= self.deadline:
            self.out_of_time = True
            return True
        return False

    def error(self, exc: Any) -> None:
        kind = "timeout" if exc.timed_out else "tool_error"
        self.result["errors"].append(error_record(DOMAIN, kind, str(exc), exc.url, "redfish"))

    def get(self, path: Optional[str], optional: bool = True) -> Optional[Dict[str, Any]]:
        if not path or path in self.seen or self._stop():
            return None
        self.seen.add(path)
        self.docs += 1
        try:
            return self.http.get_json(path)
        except _http().HttpError as exc:
            if optional and exc.status in (404, 405, 501):
                return None
            self.error(exc)
            return None

    def parse(self, doc: Optional[Dict[str, Any]], path: Optional[str] = None) -> None:
        if doc is None:
            return
        try:
            _merge_redfish(self.result, _redfish.parse_document(doc, path, self.result["errors"]))
        except ParseError as exc:
            self.result["errors"].append(exc.to_error(DOMAIN))

    def members(self, path: Optional[str], limit: int = 500) -> List[Dict[str, Any]]:
        """Member documents of a collection: expanded members as they are, links fetched."""
        if not path or path in self.seen or self._stop():
            return []
        self.seen.add(path)
        try:
            refs = self.http.get_members(path, max_members=limit)
        except _http().HttpError as exc:
            if exc.status not in (404, 405, 501):
                self.error(exc)
            return []
        out = []
        for m in refs:
            if any(k != "@odata.id" for k in m):
                out.append(m)
            else:
                d = self.get(m.get("@odata.id"))
                if d is not None:
                    out.append(d)
        return out

    def log_services(self, owner: Dict[str, Any]) -> None:
        for svc in self.members(self.http.link(owner, "LogServices")):
            entries = self.http.link(svc, "Entries")
            for e in self.members(entries, limit=MAX_LOG_ENTRIES):
                self.parse(e, entries)

    def walk(self) -> None:
        root = self.get("/redfish/v1", optional=False)
        if root is None:
            return
        for system in self.members(self.http.link(root, "Systems")):
            self.parse(system)
            for mem in self.members(self.http.link(system, "Memory")):
                self.parse(mem)
            self.log_services(system)
        for chassis in self.members(self.http.link(root, "Chassis")):
            self.chassis(chassis)
        for manager in self.members(self.http.link(root, "Managers")):
            self.parse(manager)
            self.log_services(manager)
        upd = self.get(self.http.link(root, "UpdateService"))
        if upd is not None:
            for fw in self.members(self.http.link(upd, "FirmwareInventory"), limit=1000):
                self.parse(fw)

    def walk_leak(self) -> None:
        """The leak subset: the chassis and their leak detectors, nothing else."""
        root = self.get("/redfish/v1", optional=False)
        if root is None:
            return
        for chassis in self.members(self.http.link(root, "Chassis")):
            self.parse(chassis)
            ts = self.get(self.http.link(chassis, "ThermalSubsystem"))
            if ts is not None:
                self.leak_detection(ts)

    def chassis(self, chassis: Dict[str, Any]) -> None:
        self.parse(chassis)
        ts = self.get(self.http.link(chassis, "ThermalSubsystem"))
        if ts is not None:
            self.thermal_subsystem(ts)
        thermal = self.get(self.http.link(chassis, "Thermal"))
        self.parse(thermal)
        self.power(chassis)
        if ts is None and thermal is None:
            for sensor in self.members(self.http.link(chassis, "Sensors"), limit=300):
                self.parse(sensor)
        elif any(self.http.link(ts, k) for k in ("LeakDetection", "CoolantConnectors", "Pumps")):
            # a liquid-cooled chassis: its coolant sensors (flow, pressure, liquid temperatures) are only in
            # Sensors. Keep those; the rest came from Thermal/ThermalSubsystem (issue 12: typed "coolant",
            # cooling findings, never the leak power-off path)
            for sensor in self.members(self.http.link(chassis, "Sensors"), limit=300):
                if _redfish.sensor_type(sensor)[0] == "coolant":
                    self.parse(sensor)

    def thermal_subsystem(self, ts: Dict[str, Any]) -> None:
        for fan in self.members(self.http.link(ts, "Fans")):
            self.parse(fan)
        self.leak_detection(ts)

    def leak_detection(self, ts: Dict[str, Any]) -> None:
        """A ThermalSubsystem's leak detectors (or the LeakDetection resource itself when it lists none)."""
        leak = self.get(self.http.link(ts, "LeakDetection"))
        if leak is not None:
            detectors = self.members(self.http.link(leak, "LeakDetectors"))
            for det in detectors:
                self.parse(det)
            if not detectors:
                self.parse(leak)

    def power(self, chassis: Dict[str, Any]) -> None:
        """PowerSubsystem first; the deprecated Power resource adds its PSUs only when PowerSubsystem had none."""
        ps = self.get(self.http.link(chassis, "PowerSubsystem"))
        if ps is not None:
            for psu in self.members(self.http.link(ps, "PowerSupplies")):
                self.parse(psu)
        power = self.get(self.http.link(chassis, "Power"))
        if power is not None and (ps is None or not self.result["redfish"]["psus"]):
            self.parse(power)
        elif power is not None:
            frag = _redfish.parse_document(power, None, self.result["errors"])
            frag.pop("psus", None)
            frag["sensors"] = [s for s in frag["sensors"] if s["type"] != "power_supply"]
            _merge_redfish(self.result, frag)


def redfish_base_url(host: str, port: Optional[int] = None) -> str:
    if host.startswith("https://") or host.startswith("http://"):
        return host.rstrip("/")
    h = "[%s]" % host if ":" in host and not host.startswith("[") else host
    return "https://%s%s" % (h, ":%d" % int(port) if port else "")


def collect_redfish(
    host: str,
    user: Optional[str],
    password: Optional[str],
    port: Optional[int],
    timeout: float,
    subset: Optional[List[str]] = None,
    **tls: Any,
) -> Dict[str, Any]:
    """Walk a BMC over Redfish. ``tls``: ``validate_certs``, ``ca_path`` and ``auth`` (``_http.Http``); a session
    the walk logged in with is deleted at the end, whatever happened. ``subset`` (``SUBSETS``) reads only those
    parts; the result then lists what it did not read in ``not_read`` (never read as empty or healthy)."""
    result = empty_result("redfish")
    if subset:
        result["subset"] = sorted(subset)
        result["not_read"] = sorted(set.intersection(*(set(SUBSETS[s]) for s in subset)))
    try:
        http = _http().Http(
            redfish_base_url(host, port),
            user,
            password,
            validate_certs=tls.get("validate_certs", True),
            timeout=timeout,
            ca_path=tls.get("ca_path"),
            auth=tls.get("auth") or "auto",
        )
    except _http().HttpError as exc:  # a ca_path that is not a file
        result["errors"].append(error_record(DOMAIN, "tool_error", str(exc), exc.url, "redfish"))
        return result
    walker = _Walker(http, result, budget_s=WALK_TIMEOUTS * timeout)
    try:
        if subset:
            walker.walk_leak()
        else:
            walker.walk()
    finally:
        http.close()
    if walker.out_of_time:
        msg = "Redfish walk stopped after %.0f s (%d documents read)" % (WALK_TIMEOUTS * timeout, walker.docs)
        result["errors"].append(error_record(DOMAIN, "timeout", msg, http.base_url, "redfish"))
    elif walker.docs >= MAX_DOCS:
        result["errors"].append(
            error_record(DOMAIN, "tool_error", "stopped after %d Redfish documents" % MAX_DOCS, http.base_url)
        )
    return result


# ------------------------------------------------------------------------------------------ entry point


#: What ``collect(**connection)`` accepts besides its named parameters.
CONNECTION_KEYS = ("host", "user", "password", "port", "validate_certs", "ca_path", "auth")


def collect(
    capture_dir: Optional[str] = None,
    mode: str = "inband",
    timeout: float = 30,
    ipmitool_path: str = "ipmitool",
    subset: Optional[List[str]] = None,
    **connection: Any,
) -> Dict[str, Any]:
    """The ``bmc`` domain dict. Never raises: failures are error records.

    ``subset`` (``SUBSETS``, Redfish only; empty or None: the whole BMC) reads only what that subset needs.

    ``connection`` holds the out-of-band BMC: ``host``, ``user``, ``password``, ``port``, ``validate_certs``,
    ``ca_path`` and ``auth`` (Redfish: ``auto``, ``session`` or ``basic``, see ``_http``).
    """
    password = connection.get("password")
    try:
        unknown = sorted(set(connection) - set(CONNECTION_KEYS))
        if unknown:
            raise TypeError("unknown connection option(s): %s" % ", ".join(unknown))
        host, user, port = connection.get("host"), connection.get("user"), connection.get("port")
        if capture_dir:
            return collect_capture(capture_dir)
        if mode not in MODES:
            result = empty_result(None)
            result["errors"].append(error_record(DOMAIN, "internal", "unknown mode %r" % (mode,)))
            return result
        if mode in ("ipmi_lan", "redfish") and not host:
            result = empty_result(None)
            result["errors"].append(error_record(DOMAIN, "missing", "mode %s needs a BMC host" % mode))
            return result
        bad = sorted(set(subset or []) - set(SUBSETS))
        if bad:
            result = empty_result(None)
            result["errors"].append(error_record(DOMAIN, "internal", "unknown subset(s): %s" % ", ".join(bad)))
            return result
        if mode == "redfish":
            tls = {k: connection.get(k) for k in ("validate_certs", "ca_path", "auth") if connection.get(k) is not None}
            return collect_redfish(str(host), user, password, port, timeout, list(subset or []), **tls)
        return collect_ipmitool(mode, host, user, password, port, timeout, ipmitool_path)
    except Exception as exc:  # noqa: BLE001 - the collector boundary: a bug becomes an error record
        result = empty_result(None)
        result["errors"].append(internal_error(DOMAIN, exc, redact=password))
        return result
