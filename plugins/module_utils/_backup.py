# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a change touches on a node, read for a configuration snapshot (docs/backup.md).

Runs on managed nodes (Python 3.8+, stdlib only, no Ansible imports). :func:`collect` reads every source of
:data:`DEFAULT_SOURCES` (files, globs, commands) and returns one *entry* per file or command output:

``{name, source, kind, status, path, content (base64), sha256, size, mode, uid, gid, owner, group, restore, error}``

``status`` is ``ok``, ``absent`` (an optional source that is not there: recorded, never silently skipped) or
``error`` (there but unreadable, too large, a command that failed or timed out). A symbolic link or a file with
the setuid, setgid or sticky bit is read as evidence only (``restore`` false, ``note`` says why): a restore never
follows links and never sets those bits. :func:`restorable_problems` is the one rule, on the node and on the
controller, of what a restore may write: a regular file a configured source produces (:func:`path_in_sources`),
with the owner and a plain mode as captured. :func:`redfish_entries` reads the
BIOS attributes and BMC settings over Redfish (an ``_http.Http``-like client) with every secret-looking key
removed: account passwords are never read into a snapshot.
"""

from __future__ import annotations

import base64
import fnmatch
import glob
import grp
import hashlib
import json
import os
import posixpath
import pwd
import re
import stat
from typing import Any, Callable, Dict, List, Optional

#: Largest file or command output one entry holds (a configuration file is kilobytes).
MAX_ENTRY_BYTES = 8 * 1024 * 1024
#: Most entries one snapshot of a node holds, and their largest total (the controller enforces the same limits,
#: plugins/plugin_utils/backup/store.py; docs/backup.md "Limits").
MAX_ENTRIES = 1000
MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
#: Mode bits a restore never sets (setuid, setgid, sticky).
SPECIAL_BITS = 0o7000
_MODE = re.compile(r"0?[0-7]{3}")
_ACCOUNT = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?")

#: Packages whose versions a snapshot lists (driver, fabric manager, DCGM, OFED/mlnx, Slurm, CUDA).
PACKAGE_PATTERN = re.compile(r"(nvidia|cuda|datacenter-gpu-manager|dcgm|mlnx|ofed|rdma|slurm|fabricmanager)", re.I)

#: Keys never stored from a Redfish document (account passwords, tokens, keys).
SECRET_KEY = re.compile(r"(pass(word|wd|phrase)?|secret|token|credential|private.?key|community)", re.I)

#: Every node source: ``path`` (one file), ``glob`` (each match is one entry; none: one ``absent`` entry) or
#: ``argv`` (a command's output). ``restore: False``: evidence only (kernel state, versions), never written back.
DEFAULT_SOURCES: List[Dict[str, Any]] = [
    {"path": "/etc/slurm/slurm.conf"},
    {"path": "/etc/slurm/gres.conf"},
    {"path": "/etc/slurm/cgroup.conf"},
    {"path": "/etc/default/slurmd"},
    {"glob": "/etc/modprobe.d/*nvidia*"},
    {"glob": "/etc/modprobe.d/*mlx*"},
    {"path": "/etc/default/nvidia-persistenced"},
    {"glob": "/etc/systemd/system/nvidia-persistenced.service.d/*.conf"},
    {"path": "/usr/share/nvidia/nvswitch/fabricmanager.cfg"},
    {"path": "/etc/nvidia/fabricmanager.cfg"},
    {"path": "/proc/cmdline", "restore": False},
    {"path": "/etc/default/grub"},
    {"glob": "/etc/default/grub.d/*.cfg"},
    {"path": "/etc/kernel/cmdline"},
    {"glob": "/boot/loader/entries/*.conf"},
    {"glob": "/etc/netplan/*.yaml"},
    {"path": "/etc/network/interfaces"},
    {"path": "/etc/infiniband/openib.conf"},
    {"path": "/etc/rdma/rdma.conf"},
    {"path": "/sys/module/nvidia/version", "restore": False},
    {
        "name": "commands/nvidia-smi-versions.csv",
        "argv": [
            "nvidia-smi",
            "--query-gpu=index,pci.bus_id,serial,driver_version,vbios_version",
            "--format=csv,noheader",
        ],
    },
    {"name": "commands/packages.txt", "argv": ["dpkg-query", "-W", "-f=${Package}\t${Version}\t${Status}\n"]},
    {"name": "commands/hca-firmware.txt", "sysfs_fw": "/sys/class/infiniband"},
    {"name": "commands/mlxconfig", "mlxconfig": "/sys/class/infiniband"},
]


class BackupSourceError(ValueError):
    """A source definition the collector cannot use (bad shape, relative path)."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _owner(uid: int) -> Optional[str]:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


def _group(gid: int) -> Optional[str]:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return None


def _entry(name: str, source: str, kind: str, restore: bool, path: Optional[str] = None) -> Dict[str, Any]:
    return {
        "name": name,
        "source": source,
        "kind": kind,
        "path": path,
        "status": "absent",
        "content": None,
        "sha256": None,
        "size": None,
        "mode": None,
        "uid": None,
        "gid": None,
        "owner": None,
        "group": None,
        "restore": restore and kind == "file",
        "error": None,
    }


def with_content(entry: Dict[str, Any], data: bytes) -> Dict[str, Any]:
    """Fill ``entry`` with ``data``: base64 content, sha256, size, status ``ok``."""
    entry.update(
        status="ok",
        content=base64.b64encode(data).decode("ascii"),
        sha256=sha256_hex(data),
        size=len(data),
    )
    return entry


def _fail(entry: Dict[str, Any], message: str) -> Dict[str, Any]:
    entry.update(status="error", error=message)
    return entry


def file_name(path: str) -> str:
    """The snapshot name of a node file: ``files/etc/slurm/gres.conf``."""
    return "files/" + path.lstrip("/")


def read_file(path: str, restore: bool = True, name: Optional[str] = None) -> Dict[str, Any]:
    """One file as an entry: ``absent`` when it does not exist, ``error`` when it is not a readable regular file."""
    entry = _entry(name or file_name(path), path, "file", restore, path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return entry
    except OSError as exc:
        return _fail(entry, "cannot stat: %s" % (exc.strerror or exc))
    entry.update(mode="%04o" % stat.S_IMODE(st.st_mode), uid=st.st_uid, gid=st.st_gid)
    entry.update(owner=_owner(st.st_uid), group=_group(st.st_gid))
    if os.path.islink(path):
        entry.update(
            link=os.readlink(path), restore=False, note="a symbolic link: evidence only, a restore never follows links"
        )
    if not stat.S_ISREG(st.st_mode):
        return _fail(entry, "not a regular file")
    if st.st_mode & SPECIAL_BITS:
        entry.update(restore=False, note="setuid/setgid/sticky bit: evidence only, a restore never sets them")
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_ENTRY_BYTES + 1)
    except OSError as exc:
        return _fail(entry, "cannot read: %s" % (exc.strerror or exc))
    if len(data) > MAX_ENTRY_BYTES:
        return _fail(entry, "larger than %d bytes" % MAX_ENTRY_BYTES)
    return with_content(entry, data)


def read_glob(pattern: str, restore: bool = True, limit: int = MAX_ENTRIES) -> List[Dict[str, Any]]:
    """Every match of ``pattern`` as an entry; no match: one ``absent`` entry naming the pattern; more than
    ``limit`` matches: one ``error`` entry (nothing read)."""
    matches = sorted(glob.glob(pattern))
    if not matches:
        return [_entry(file_name(pattern), pattern, "file", restore, None)]
    if len(matches) > limit:
        return [_fail(_entry(file_name(pattern), pattern, "file", restore, None),
                      "%d matches, more than the %d entries a snapshot holds" % (len(matches), limit))]  # fmt: skip
    return [read_file(p, restore) for p in matches]


def run_entry(name: str, argv: List[str], runner: Callable[..., Any], which: Callable[[str], Any], timeout: float):
    """A command's stdout as an entry: ``absent`` when the tool is not installed, ``error`` when it fails."""
    source = "command: " + " ".join(argv)
    entry = _entry(name, source, "command", False)
    if not which(argv[0]):
        entry["error"] = "%s not installed" % argv[0]
        return entry
    res = runner(argv, timeout=timeout)
    if res.timed_out:
        return _fail(entry, "timed out after %ss" % timeout)
    if res.error or res.rc != 0:
        lines = (res.stderr or res.stdout or "").strip().splitlines()
        return _fail(entry, "exit %s: %s" % (res.rc, res.error or (lines[-1][:300] if lines else "")))
    return with_content(entry, res.stdout.encode("utf-8"))


def _devices(sysfs: str) -> List[str]:
    try:
        return sorted(os.listdir(sysfs))
    except OSError:
        return []


def hca_firmware(name: str, sysfs: str) -> Dict[str, Any]:
    """``<device> <fw_ver> <board_id>`` of every HCA from sysfs (no tool needed)."""
    entry = _entry(name, "sysfs: %s/*/fw_ver" % sysfs, "command", False)
    lines = []
    for dev in _devices(sysfs):
        fields = [dev]
        for attr in ("fw_ver", "board_id"):
            try:
                with open(os.path.join(sysfs, dev, attr), "rb") as fh:
                    fields.append(fh.read(4096).decode("utf-8", "replace").strip() or "-")
            except OSError:
                fields.append("-")
        lines.append(" ".join(fields))
    if not lines:
        return entry
    return with_content(entry, ("\n".join(lines) + "\n").encode("utf-8"))


def mlxconfig_entries(prefix: str, sysfs: str, runner, which, timeout: float) -> List[Dict[str, Any]]:
    """``mlxconfig -d <dev> query`` for each HCA when mlxconfig is installed (else one ``absent`` entry)."""
    devs = _devices(sysfs)
    if not devs or not which("mlxconfig"):
        entry = _entry(prefix + ".txt", "command: mlxconfig -d <dev> query", "command", False)
        entry["error"] = "no HCA" if not devs else "mlxconfig not installed"
        return [entry]
    return [run_entry("%s-%s.txt" % (prefix, d), ["mlxconfig", "-d", d, "query"], runner, which, timeout) for d in devs]


def check_sources(sources: Any) -> List[Dict[str, Any]]:
    """Validate source definitions (absolute paths, one kind each); raises BackupSourceError."""
    if not isinstance(sources, list):
        raise BackupSourceError("sources must be a list")
    kinds = ("path", "glob", "argv", "sysfs_fw", "mlxconfig")
    for src in sources:
        if not isinstance(src, dict) or sum(1 for k in kinds if src.get(k)) != 1:
            raise BackupSourceError("each source needs exactly one of %s: %r" % (", ".join(kinds), src))
        for key in ("path", "glob", "sysfs_fw", "mlxconfig"):
            if src.get(key) and not str(src[key]).startswith("/"):
                raise BackupSourceError("%s must be absolute: %r" % (key, src[key]))
        if src.get("argv") and (not isinstance(src["argv"], list) or not src.get("name")):
            raise BackupSourceError("a command source needs argv (a list) and a name: %r" % (src,))
    return sources


def with_extra_paths(sources: List[Dict[str, Any]], extra_paths: Any) -> List[Dict[str, Any]]:
    """``sources`` plus one ``path`` (or ``glob``, when it has ``*?[``) source per extra path."""
    extra = [str(x) for x in (extra_paths or [])]
    return list(sources) + [{"glob" if any(c in x for c in "*?[") else "path": x} for x in extra]


def _within_limits(e: Dict[str, Any], count: int, total: int) -> Dict[str, Any]:
    if count > MAX_ENTRIES:
        return _fail(
            dict(e, content=None, sha256=None, size=None), "more than %d entries in one snapshot" % MAX_ENTRIES
        )
    if total > MAX_SNAPSHOT_BYTES:
        return _fail(dict(e, content=None, sha256=None, size=None),
                     "the snapshot would exceed %d bytes" % MAX_SNAPSHOT_BYTES)  # fmt: skip
    return e


def collect(sources: List[Dict[str, Any]], runner, which, timeout: float = 30.0) -> List[Dict[str, Any]]:
    """Every source as entries, in order; a name that occurs twice keeps its first entry. Beyond
    :data:`MAX_ENTRIES` entries or :data:`MAX_SNAPSHOT_BYTES` in all, entries are ``error`` (content dropped)."""
    seen, unique = set(), []
    total = 0
    for src in check_sources(sources):
        restore = bool(src.get("restore", True))
        if src.get("path"):
            got = [read_file(src["path"], restore, src.get("name"))]
        elif src.get("glob"):
            got = read_glob(src["glob"], restore)
        elif src.get("argv"):
            got = [run_entry(src["name"], [str(a) for a in src["argv"]], runner, which, timeout)]
        elif src.get("sysfs_fw"):
            got = [hca_firmware(src.get("name") or "commands/hca-firmware.txt", src["sysfs_fw"])]
        else:
            got = mlxconfig_entries(src.get("name") or "commands/mlxconfig", src["mlxconfig"], runner, which, timeout)
        for e in got:
            if e["name"] in seen:
                continue
            seen.add(e["name"])
            size = e.get("size") or 0
            e = _within_limits(e, len(unique) + 1, total + size)
            total += size if e["status"] == "ok" else 0
            unique.append(e)
    return unique


def _pattern_matches(pattern: str, path: str) -> bool:
    """``glob.glob`` semantics for one path: per ``/`` component, ``*?[`` never cross ``/``, and a leading ``.`` is
    matched only by a literal ``.``."""
    pat, got = pattern.split("/"), path.split("/")
    if len(pat) != len(got):
        return False
    for p, g in zip(pat, got):
        if g.startswith(".") and not p.startswith("."):
            return False
        if not fnmatch.fnmatchcase(g, p):
            return False
    return True


def clean_path(path: Any) -> bool:
    """An absolute, normalized path (no ``..``, ``.``, ``//``, trailing ``/``, NUL or newline)."""
    return (
        isinstance(path, str)
        and path.startswith("/")
        and len(path) <= 4096
        and "\0" not in path
        and "\n" not in path
        and path != "/"
        and posixpath.normpath(path) == path
        and not path.startswith("//")
    )


def path_in_sources(path: Any, sources: List[Dict[str, Any]]) -> bool:
    """True when a restorable ``path``/``glob`` source of ``sources`` produces ``path`` (the node's configured
    sources: a restore writes nothing else)."""
    if not clean_path(path):
        return False
    for src in sources:
        if not isinstance(src, dict) or src.get("restore", True) is False:
            continue
        if src.get("path") and src["path"] == path:
            return True
        if src.get("glob") and _pattern_matches(str(src["glob"]), path):
            return True
    return False


def restorable_problems(rec: Dict[str, Any], sources: List[Dict[str, Any]]) -> List[str]:
    """Why a restore must not write the file record ``rec`` (empty: it may): the path is not produced by the
    configured ``sources``, it was a link, its mode is not a plain captured mode (setuid/setgid/sticky, missing), or
    its owner or group was not captured as an account name or a number."""
    problems = []
    path = rec.get("path")
    if not clean_path(path):
        problems.append("path %r is not an absolute normalized path" % (path,))
    elif not path_in_sources(path, sources):
        problems.append("%s is not produced by the node's backup sources" % path)
    if rec.get("link") is not None:
        problems.append("a symbolic link (restores never follow links)")
    mode = rec.get("mode")
    if not isinstance(mode, str) or not _MODE.fullmatch(mode):
        if isinstance(mode, str) and re.fullmatch(r"[0-7]{4}", mode) and int(mode, 8) & SPECIAL_BITS:
            problems.append("mode %s sets setuid/setgid/sticky bits (restores never do)" % mode)
        else:
            problems.append("mode %r is not a captured file mode" % (mode,))
    for name, num in (("owner", "uid"), ("group", "gid")):
        label, number = rec.get(name), rec.get(num)
        if label is not None and (not isinstance(label, str) or not _ACCOUNT.fullmatch(label)):
            problems.append("%s %r is not an account name" % (name, label))
        if number is not None and (
            isinstance(number, bool) or not isinstance(number, int) or not 0 <= number < 2**32 - 1
        ):
            problems.append("%s %r is not a captured id" % (num, number))
        if label is None and number is None:
            problems.append("no %s was captured" % name)
    return problems


def filter_packages(entry: Dict[str, Any]) -> Dict[str, Any]:
    """Keep only the GPU/IB/Slurm packages of the ``dpkg-query`` listing (the rest is not what a change touches)."""
    if entry.get("status") != "ok" or entry.get("name") != "commands/packages.txt":
        return entry
    text = base64.b64decode(entry["content"]).decode("utf-8", "replace")
    kept = "".join(ln + "\n" for ln in text.splitlines() if PACKAGE_PATTERN.search(ln.split("\t", 1)[0]))
    return with_content(entry, kept.encode("utf-8"))


def scrub(doc: Any) -> Any:
    """``doc`` without secret-looking keys (recursively) and without OData annotations that change every read."""
    if isinstance(doc, dict):
        return {
            k: scrub(v)
            for k, v in sorted(doc.items())
            if not SECRET_KEY.search(str(k)) and k not in ("@odata.etag", "DateTime", "DateTimeLocalOffset")
        }
    if isinstance(doc, list):
        return [scrub(v) for v in doc]
    return doc


def _json_entry(name: str, source: str, doc: Any) -> Dict[str, Any]:
    entry = _entry(name, source, "redfish", False)
    return with_content(entry, (json.dumps(scrub(doc), indent=1, sort_keys=True) + "\n").encode("utf-8"))


def _get(http: Any, path: str, name: str, errors: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    try:
        return http.get_json(path)
    except Exception as exc:  # noqa: BLE001 - every client error (HTTP, TLS, JSON) becomes an error entry
        errors.append(_fail(_entry(name, "redfish: GET %s" % path, "redfish", False), str(exc)[:300]))
        return None


def _link(doc: Optional[Dict[str, Any]], key: str) -> Optional[str]:
    val = (doc or {}).get(key)
    return val.get("@odata.id") if isinstance(val, dict) else None


def redfish_entries(http: Any, system_id: Optional[str] = None) -> List[Dict[str, Any]]:
    """BIOS attributes (``redfish/bios.json``: the Bios resource, ``Attributes`` and its settings object) and BMC
    settings (``redfish/manager.json``, ``redfish/network-protocol.json``) of one system; errors are entries."""
    out: List[Dict[str, Any]] = []
    errors: List[Dict[str, Any]] = []
    root = _get(http, "/redfish/v1", "redfish/service-root.json", errors) or {}
    systems = _get(http, _link(root, "Systems") or "/redfish/v1/Systems", "redfish/systems.json", errors) or {}
    members = [m.get("@odata.id") for m in systems.get("Members") or [] if isinstance(m, dict)]
    if system_id:
        members = [m for m in members if m and m.rstrip("/").rsplit("/", 1)[-1] == system_id]
    if not members:
        if not errors:
            errors.append(_fail(_entry("redfish/system.json", "redfish: Systems", "redfish", False), "no such system"))
        return errors
    system = _get(http, members[0], "redfish/system.json", errors)
    bios_path = _link(system, "Bios")
    bios = _get(http, bios_path, "redfish/bios.json", errors) if bios_path else None
    if bios is not None:
        doc = {"system": members[0], "bios": bios_path, "Attributes": bios.get("Attributes") or {}}
        settings = (bios.get("@Redfish.Settings") or {}).get("SettingsObject") or {}
        doc["settings_object"] = settings.get("@odata.id")
        out.append(_json_entry("redfish/bios.json", "redfish: GET %s" % bios_path, doc))
    managers = ((system or {}).get("Links") or {}).get("ManagedBy") or []
    mgr_path = managers[0].get("@odata.id") if managers and isinstance(managers[0], dict) else None
    if mgr_path:
        mgr = _get(http, mgr_path, "redfish/manager.json", errors)
        if mgr is not None:
            out.append(_json_entry("redfish/manager.json", "redfish: GET %s" % mgr_path, mgr))
            proto = _link(mgr, "NetworkProtocol")
            pdoc = _get(http, proto, "redfish/network-protocol.json", errors) if proto else None
            if pdoc is not None:
                out.append(_json_entry("redfish/network-protocol.json", "redfish: GET %s" % proto, pdoc))
    return out + errors


def bios_changes(saved: Dict[str, Any], current: Dict[str, Any]) -> Dict[str, Any]:
    """The attributes to PATCH so that ``current`` becomes ``saved`` (attributes the BMC no longer has are left out)."""
    return {k: v for k, v in sorted(saved.items()) if k in current and current[k] != v}
