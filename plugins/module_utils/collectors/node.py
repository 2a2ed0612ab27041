# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node basics: the ``node`` domain of docs/facts.md.

Hostname, kernel, OS, boot id, memory, expected mounts (present and responsive), free space on named
filesystems, the NVIDIA services an operator expects (``_node_services``: running only on the service's own record,
systemd's unit or the daemon's pid file, never on a process name alone), and the fabric manager version.

A hung NFS/Lustre mount blocks ``stat()`` in the kernel, and would hang the play with it. This module
never touches a mount point in its own process: presence comes from ``/proc/self/mounts``, and every
probe (``stat -f``) runs as a child through ``_runner.run_command``, killed and abandoned after the
timeout. Probes run in parallel, so N hung mounts still cost one timeout, not N.

Runs on managed nodes (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

import os
import socket
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import capture as _capture
from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    ParseError,
    error_record,
    internal_error,
)
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import node_services as _node_services
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.node import (
    mount_containing,
    mount_of,
    os_name,
    parse_dpkg_versions,
    parse_fm_version,
    parse_is_active,
    parse_meminfo,
    parse_mounts,
    parse_os_release,
    parse_rpm_versions,
    parse_show,
    parse_stat_f,
)
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.node_services import (
    ALIASES,
    COMM_LEN,
    DEFAULT_SERVICES,
    FABRIC_MANAGER,
    KNOWN_SERVICES,
    check_services,
    service_spec,
)

from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command, run_in_child, which
from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson

#: the public names, some of them re-exported from the modules this one was split into
__all__ = [
    "ALIASES",
    "COMM_LEN",
    "DEFAULT_SERVICES",
    "DOMAIN",
    "FABRIC_MANAGER",
    "KNOWN_SERVICES",
    "MAX_PROBES_IN_PARALLEL",
    "check_mounts",
    "check_services",
    "collect",
    "fabric_manager_version",
    "mount_containing",
    "mount_of",
    "os_name",
    "parse_dpkg_versions",
    "parse_fm_version",
    "parse_is_active",
    "parse_meminfo",
    "parse_mounts",
    "parse_os_release",
    "parse_rpm_versions",
    "parse_show",
    "parse_stat_f",
    "probe_path",
    "service_spec",
]

DOMAIN = "node"

#: how the fabric manager's package version is asked (dpkg-query, else rpm): the node shell capture runs the same
DPKG_FORMAT = "${db:Status-Abbrev} ${Package} ${Version}\n"
FM_PACKAGES = ("nvidia-fabricmanager*", "cuda-drivers-fabricmanager*")
RPM_FORMAT = "%{NAME} %{VERSION}\n"
RPM_PATTERN = "nvidia-fabric*manager*"
#: ``stat -f -c`` format of a mount probe (parse_stat_f reads it; the node shell capture runs the same)
STATFS_FORMAT = "%b %f %a %S"
#: the paths the node collector reads (the shell capture sends them back for the replay)
READ_PATHS = (
    "/proc/sys/kernel/hostname",
    "/proc/sys/kernel/osrelease",
    "/proc/sys/kernel/random/boot_id",
    "/etc/os-release",
    "/usr/lib/os-release",
    "/proc/meminfo",
    "/proc/self/mounts",
    "/proc/mounts",
)

MAX_PROBES_IN_PARALLEL = 16

# ---------------------------------------------------------------------------------------------------------------
# Live probes
# ---------------------------------------------------------------------------------------------------------------


def _read(root: str, path: str) -> Optional[str]:
    try:
        with open(os.path.join(root, path.lstrip("/")), "rb") as fh:
            return fh.read(1024 * 1024).decode("utf-8", errors="replace")
    except OSError:
        return None


class LiveIO:
    """What the node collector reads and runs, on the node itself. ``plugin_utils/inspect/shcapture.ReplayIO`` answers
    the same calls on the controller from what a node's shell capture sent back (``collect_info``
    ``capture_via: shell``), so that one collector, this one, makes ``node.json`` either way."""

    def read(self, root: str, path: str) -> Optional[str]:
        return _read(root, path)

    def which(self, name: str) -> Optional[str]:
        return which(name)

    def isdir(self, path: str) -> bool:
        return os.path.isdir(path)

    def run(self, argv: List[str], timeout: float) -> Any:
        return run_command(argv, timeout=timeout)

    def probe_all(self, paths: List[str], timeout: float) -> Dict[str, Dict[str, Any]]:
        return _probe_all(paths, timeout)

    def process_table(self, root: str) -> Optional[Dict[str, List[int]]]:
        return _node_services.process_table(root)

    def process_status(self, root: str, pid: int) -> Optional[Dict[str, Any]]:
        return _node_services.process_status(root, pid)

    def process_exe(self, root: str, pid: int) -> Optional[str]:
        return _node_services.process_exe(root, pid)

    def process_argv0(self, root: str, pid: int) -> Optional[str]:
        return _node_services.process_argv0(root, pid)

    def user_uid(self, root: str, name: str) -> Optional[int]:
        return _node_services.user_uid(root, name)

    def own_names(self, root: str) -> Tuple[Optional[str], Optional[str]]:
        """(hostname, kernel release) of this process's host when ``root`` is the live root, else (None, None)."""
        if os.path.realpath(root) != "/":
            return None, None
        return socket.gethostname(), os.uname().release


LIVE_IO = LiveIO()


def _statvfs(path: str) -> List[int]:
    st = os.statvfs(path)
    return [st.f_blocks, st.f_bfree, st.f_bavail, st.f_frsize]


def probe_result(res: Any, timeout: float) -> Dict[str, Any]:
    """A ``stat -f -c '%b %f %a %S'`` run (a :class:`_runner.CommandResult`, or a node's answer replayed on the
    controller) as :func:`probe_path`'s record."""
    out: Dict[str, Any] = {"responsive": None, "size_mib": None, "free_mib": None, "free_pct": None, "error": None}
    if res.timed_out:
        out.update(responsive=False, error=f"not responding: statfs did not return within {timeout:.0f} s")
        return out
    if not res.ok:
        out.update(responsive=False, error=res.describe())
        return out
    return _probe_text(out, res.stdout)


def _probe_text(out: Dict[str, Any], text: str) -> Dict[str, Any]:
    try:
        out.update(parse_stat_f(text, "stat -f"))
    except ParseError as exc:
        out.update(responsive=True, error=str(exc))
        return out
    out["responsive"] = True
    return out


def probe_path(path: str, timeout: float) -> Dict[str, Any]:
    """statvfs ``path`` in a child killed after ``timeout``: ``{responsive, size_mib, free_mib, free_pct, error}``."""
    argv = _probe_argv(path)
    if argv:
        return probe_result(run_command(argv, timeout=timeout), timeout)
    # no stat(1): statvfs in a forked child
    out: Dict[str, Any] = {"responsive": None, "size_mib": None, "free_mib": None, "free_pct": None, "error": None}
    res2 = run_in_child(_statvfs, (path,), timeout)
    if res2.get("timed_out"):
        out.update(responsive=False, error=f"not responding: statfs did not return within {timeout:.0f} s")
        return out
    if not res2.get("ok"):
        out.update(responsive=False, error=str(res2.get("error")))
        return out
    return _probe_text(out, " ".join(str(n) for n in res2["value"]))


def _probe_argv(path: str) -> Optional[List[str]]:
    exe = which("stat")
    return [exe, "-f", "-c", STATFS_FORMAT, "--", path] if exe else None


def _probe_all(paths: List[str], timeout: float) -> Dict[str, Dict[str, Any]]:
    if not paths:
        return {}
    if len(paths) == 1 or _probe_argv(paths[0]) is None:
        # no stat(1): probes fork (run_in_child), and forking from threads is unsafe: one after the other
        return {p: probe_path(p, timeout) for p in paths}
    with ThreadPoolExecutor(max_workers=min(len(paths), MAX_PROBES_IN_PARALLEL)) as pool:
        results = list(pool.map(lambda p: probe_path(p, timeout), paths))
    return dict(zip(paths, results))


def _entry_path(item: Any) -> Tuple[Optional[str], Dict[str, Any]]:
    if isinstance(item, dict):
        path = item.get("path")
        return (path if isinstance(path, str) and path else None), item
    if isinstance(item, str) and item:
        return item, {}
    return None, {}


def check_mounts(
    mounts: Iterable[Any],
    filesystems: Iterable[Any],
    table: List[Dict[str, str]],
    root: str,
    timeout: float,
    io: Any = LIVE_IO,
) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """Mount and filesystem records; only present mounts and named filesystems are probed (in parallel)."""
    mount_recs = []
    to_probe: List[str] = []
    for item in mounts:
        path, spec = _entry_path(item)
        if path is None:
            continue
        entry = mount_of(table, path)
        rec: Dict[str, Any] = {
            "path": path,
            "present": entry is not None,
            "responsive": None,
            "fstype": entry["fstype"] if entry else None,
            "device": entry["device"] if entry else None,
            "free_pct": None,
            "free_mib": None,
            "size_mib": None,
            "error": None if entry else "not mounted",
        }
        want = spec.get("fstype")
        if entry and isinstance(want, str) and want and entry["fstype"] != want:
            rec["error"] = f"mounted as {entry['fstype']}, expected {want}"
        mount_recs.append(rec)
        if entry:
            to_probe.append(path)
    fs_recs = []
    for item in filesystems:
        path, _spec = _entry_path(item)
        if path is None:
            continue
        entry = mount_containing(table, path)
        fs_recs.append(
            {
                "path": path,
                "mount": entry["path"] if entry else None,
                "fstype": entry["fstype"] if entry else None,
                "responsive": None,
                "free_pct": None,
                "free_mib": None,
                "size_mib": None,
                "error": None,
            }
        )
        to_probe.append(path)
    unique = list(dict.fromkeys(to_probe))
    probed = io.probe_all([os.path.join(root, p.lstrip("/")) for p in unique], timeout)
    by_path = {p: probed[os.path.join(root, p.lstrip("/"))] for p in unique}
    for rec in mount_recs + fs_recs:
        res = by_path.get(rec["path"])
        if res is None:
            continue
        for key in ("responsive", "free_pct", "free_mib", "size_mib"):
            rec[key] = res[key]
        if res["error"]:
            rec["error"] = res["error"] if not rec["error"] else rec["error"] + "; " + res["error"]
    return mount_recs, fs_recs


#: the name ``_shcapture`` used before the services moved to ``_node_services``
_service_spec = service_spec


def fabric_manager_version(timeout: float, errors: List[Dict[str, Any]], io: Any = LIVE_IO) -> Optional[str]:
    """``nv-fabricmanager --version``, else the installed package version (dpkg-query, then rpm), else None."""
    exe = io.which("nv-fabricmanager")
    if exe:
        res = io.run([exe, "--version"], timeout)
        version = parse_fm_version(res.stdout + "\n" + res.stderr)
        if version:
            return version
        kind = "timeout" if res.timed_out else "tool_error"
        errors.append(error_record(DOMAIN, kind, res.describe(), source="nv-fabricmanager --version"))
    dpkg = io.which("dpkg-query")
    if dpkg:
        res = io.run([dpkg, "-W", "-f", DPKG_FORMAT, *FM_PACKAGES], timeout)
        version = parse_dpkg_versions(res.stdout)
        if version:
            return version
    rpm = io.which("rpm")
    if rpm:
        res = io.run([rpm, "-qa", "--qf", RPM_FORMAT, RPM_PATTERN], timeout)
        return parse_rpm_versions(res.stdout)
    return None


# ---------------------------------------------------------------------------------------------------------------
# Collector
# ---------------------------------------------------------------------------------------------------------------


def _result(source: Optional[str] = None) -> Dict[str, Any]:
    return {
        "source": source,
        "hostname": None,
        "boot_id": None,
        "kernel": None,
        "os": None,
        "memory_mib": None,
        "mounts": [],
        "filesystems": [],
        "services": {},
        "fabric_manager_version": None,
        "errors": [],
    }


def _collect_live(mounts, filesystems, services, timeout: float, root: str, io: Any = LIVE_IO) -> Dict[str, Any]:
    out = _result("live")
    own_host, own_kernel = io.own_names(root)
    host = io.read(root, "/proc/sys/kernel/hostname")
    out["hostname"] = host.strip() if host and host.strip() else own_host
    kernel = io.read(root, "/proc/sys/kernel/osrelease")
    out["kernel"] = kernel.strip() if kernel and kernel.strip() else own_kernel
    boot = io.read(root, "/proc/sys/kernel/random/boot_id")
    out["boot_id"] = boot.strip() if boot and boot.strip() else None
    rel = io.read(root, "/etc/os-release") or io.read(root, "/usr/lib/os-release")
    out["os"] = os_name(parse_os_release(rel)) if rel else None
    mem = io.read(root, "/proc/meminfo")
    out["memory_mib"] = parse_meminfo(mem) if mem else None
    mounts = list(mounts or [])
    filesystems = list(filesystems or [])
    if mounts or filesystems:
        table_text = io.read(root, "/proc/self/mounts") or io.read(root, "/proc/mounts")
        if table_text is None:
            out["errors"].append(error_record(DOMAIN, "missing", "no /proc/self/mounts", source="/proc/self/mounts"))
        table = parse_mounts(table_text or "")
        out["mounts"], out["filesystems"] = check_mounts(mounts, filesystems, table, root, timeout, io)
    names = DEFAULT_SERVICES if services is None else services
    out["services"] = check_services(names, root, timeout, out["errors"], io)
    if FABRIC_MANAGER in out["services"]:
        version = fabric_manager_version(timeout, out["errors"], io)
        out["fabric_manager_version"] = version
        out["services"][FABRIC_MANAGER]["version"] = version
    return out


#: Keys taken from node.json, with the type each must have (anything else is ignored).
_CAPTURE_TYPES = {
    "hostname": str,
    "boot_id": str,
    "kernel": str,
    "os": str,
    "memory_mib": int,
    "mounts": list,
    "filesystems": list,
    "services": dict,
    "fabric_manager_version": str,
}


def _collect_capture(capture_dir: str, mounts) -> Dict[str, Any]:
    out = _result()
    meta = _capture.meta_or_error(capture_dir, out["errors"], DOMAIN)
    try:
        text = _capture.read(capture_dir, "node.json")
    except ParseError as exc:
        out["source"] = "capture:node.json"
        out["errors"].append(exc.to_error(DOMAIN, "unreadable"))
        text = None
    if text is not None:
        out["source"] = "capture:node.json"
        try:
            data = _safejson.loads(text, what="node.json")
            if not isinstance(data, dict):
                raise ValueError("top level is not an object")
        except ValueError as exc:
            out["errors"].append(
                error_record(DOMAIN, "parse", f"invalid node.json: {exc}", _capture.path(capture_dir, "node.json"))
            )
            data = {}
        for key, kind in _CAPTURE_TYPES.items():
            value = data.get(key)
            if isinstance(value, kind) and not isinstance(value, bool):
                out[key] = value
        recorded = data.get("errors")
        if isinstance(recorded, list):
            out["errors"] = [e for e in recorded if isinstance(e, dict)] + out["errors"]
    if out["boot_id"] is None and isinstance(meta.get("boot_id"), str):
        out["boot_id"] = meta["boot_id"]
    if out["hostname"] is None and isinstance(meta.get("hostname"), str):
        out["hostname"] = meta["hostname"]
    have = {m.get("path") for m in out["mounts"] if isinstance(m, dict)}
    for item in mounts or []:
        path, _spec = _entry_path(item)
        if path and path not in have:
            out["mounts"].append(
                {
                    "path": path,
                    "present": None,
                    "responsive": None,
                    "fstype": None,
                    "free_pct": None,
                    "error": "not in the capture",
                }
            )
    return out


def collect(
    capture_dir: Optional[str] = None,
    mounts: Optional[Iterable[Any]] = None,
    filesystems: Optional[Iterable[Any]] = None,
    services: Optional[Iterable[Any]] = None,
    timeout: float = 10,
    root: str = "/",
    io: Any = LIVE_IO,
) -> Dict[str, Any]:
    """The ``node`` domain of docs/facts.md, from ``capture_dir/node.json`` or the live node.

    ``mounts``: paths (or ``{path, fstype}``) that must be mounted and responsive; ``filesystems``: paths whose
    free space is reported; ``services``: names (or ``{name, unit, process, pidfile}``), None = the NVIDIA
    defaults, [] = none. ``root`` reads another root's /proc, /etc, /run (tests). ``io``: where the reads and runs go
    (:class:`LiveIO`; on the controller, a node's shell capture replayed).
    """
    try:
        if capture_dir:
            return _collect_capture(capture_dir, mounts)
        return _collect_live(mounts, filesystems, services, float(timeout), root or "/", io)
    except Exception as exc:  # noqa: BLE001 - collector boundary: report, never raise
        out = _result()
        out["errors"].append(internal_error(DOMAIN, exc))
        return out
