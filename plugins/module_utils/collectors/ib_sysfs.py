# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""InfiniBand sysfs: a safe snapshot of ``/sys/class/infiniband`` (known attribute paths only, no link loops), its
flat listing form (``infiniband-sysfs.txt`` in a capture), HCAs from a snapshot, and saving the listing into a capture
directory. ``_ib`` re-exports its public names.

Runs on managed nodes (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

import os
import stat
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import capture as _capture
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, Records, error_record, to_int
from ansible_collections.gpuops.cluster.plugins.module_utils._files import (
    UnsafeFileError,
    decode,
    list_capture_dir,
    read_capture_bytes,
    write_private_atomic,
)
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.ib import (
    COUNTER_DIRS,
    DOMAIN,
    GID0,
    HCA_ATTRS,
    MAX_ATTR_BYTES,
    MAX_COUNTERS,
    MAX_HCAS,
    MAX_PORTS,
    PORT_ATTRS,
    PORT_NUM,
    SAFE_COUNTER,
    SAFE_NAME,
    hca_record,
    port_record,
    natural_key,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_in_child

# ---------------------------------------------------------------------------------------------------------------
# sysfs: safe snapshot, flat listing, HCAs from a snapshot
# ---------------------------------------------------------------------------------------------------------------


_OPEN_FLAGS = os.O_RDONLY
for _flag in ("O_NONBLOCK", "O_CLOEXEC", "O_NOCTTY", "O_NOFOLLOW"):
    _OPEN_FLAGS |= getattr(os, _flag, 0)


def read_attr(path: str) -> Optional[str]:
    """One sysfs attribute, stripped; None when absent, not a regular file (FIFO, dir, device) or unreadable.

    Opened with O_NONBLOCK (a FIFO planted in a tree cannot block us) and O_NOFOLLOW (sysfs attributes are never
    links: a link to a device is not opened at all); at most MAX_ATTR_BYTES are read.
    """
    flags = _OPEN_FLAGS
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_ATTR_BYTES)
    except OSError:  # EINVAL (some hw_counters), EIO (firmware), EACCES ...
        return None
    finally:
        os.close(fd)
    return decode(data).strip()


def _listdir(path: str) -> Optional[List[str]]:
    try:
        return os.listdir(path)
    except OSError:
        return None


def _capture_attr_reader(errors: List[Dict[str, Any]]) -> Callable[[str], Optional[str]]:
    """read_attr for a capture tree: the capture reader (no link, regular files only, capped), and a refused
    entry is an error naming it rather than a silent gap."""

    def read(path: str) -> Optional[str]:
        try:
            data = read_capture_bytes(path, MAX_ATTR_BYTES, "sysfs")
        except UnsafeFileError as exc:
            errors.append(exc.to_error(DOMAIN))
            return None
        return None if data is None else decode(data).strip()

    return read


def snapshot_sysfs(class_dir: str, confine: bool = False) -> Tuple[Dict[str, str], List[Dict[str, Any]]]:
    """Read the allowlisted attributes below ``class_dir`` (``.../sys/class/infiniband``).

    Returns ``({"mlx5_0/fw_ver": "28.41.1000", "mlx5_0/ports/1/counters/link_downed": "255", ...}, errors)``.
    Never walks: only the class directory, ``<hca>/ports``, ``<hca>/ports/<n>/{counters,hw_counters}`` are
    listed; entries are filtered by name; HCAs reached twice (two links to one device) are read once.
    ``confine`` (a capture tree, not the live sysfs): no directory or file that is a link is entered or read
    (the walk never leaves the capture), and each refused entry is an ``unreadable`` error naming it.
    """
    snap: Dict[str, str] = {}
    errors: List[Dict[str, Any]] = []
    listdir = list_capture_dir if confine else _listdir
    read = _capture_attr_reader(errors) if confine else read_attr
    names = listdir(class_dir)
    if names is None:
        if os.path.lexists(class_dir):
            errors.append(error_record(DOMAIN, "unreadable", f"cannot list {class_dir}", source="sysfs"))
        return snap, errors
    seen = set()
    for hca in sorted((n for n in names if SAFE_NAME.match(n)), key=natural_key)[:MAX_HCAS]:
        hdir = os.path.join(class_dir, hca)
        try:
            real = os.path.realpath(hdir)
        except (OSError, RuntimeError):  # pragma: no cover - realpath is non-strict
            real = hdir
        if real in seen:
            continue
        seen.add(real)
        if not os.path.isdir(hdir) or (confine and os.path.islink(hdir)):  # a dangling or looping link, a file
            errors.append(error_record(DOMAIN, "unreadable", f"{hdir} is not a readable HCA directory", "sysfs"))
            continue
        found = False
        present = set(listdir(hdir) or ())  # list first: no failed open() per absent attribute
        for attr in HCA_ATTRS:
            v = read(os.path.join(hdir, attr)) if attr in present else None
            if v is not None:
                snap[f"{hca}/{attr}"] = v
                found = True
        ports = listdir(os.path.join(hdir, "ports")) if "ports" in present else None
        for pn in sorted((p for p in ports or () if _port_dir(p)), key=int)[:MAX_PORTS]:
            pdir = os.path.join(hdir, "ports", pn)
            prefix = f"{hca}/ports/{pn}/"
            in_port = set(listdir(pdir) or ())
            for attr in PORT_ATTRS + (GID0,):
                v = read(os.path.join(pdir, attr)) if attr.split("/", maxsplit=1)[0] in in_port else None
                if v is not None:
                    snap[prefix + attr] = v
                    found = True
            for cdir in COUNTER_DIRS:
                entries = (listdir(os.path.join(pdir, cdir)) if cdir in in_port else None) or []
                for cname in sorted(e for e in entries if SAFE_COUNTER.match(e))[:MAX_COUNTERS]:
                    v = read(os.path.join(pdir, cdir, cname))
                    if v is not None:
                        snap[f"{prefix}{cdir}/{cname}"] = v
        if not found:
            # keep the HCA visible even when nothing below it was readable
            snap.setdefault(f"{hca}/ports", "")
    return snap, errors


#: Prefixes a listing's paths may carry: ``./`` (``grep -r . ./``), or the class directory itself.
_FLAT_PREFIXES = ("./", "/sys/class/infiniband/", "sys/class/infiniband/")


def _port_dir(name: str) -> bool:
    """A port directory's name as sysfs writes it: the PORT_NUM that hcas_from_snapshot accepts, 1-5 ASCII digits
    (``"²".isdigit()`` is True, ``int("²")`` fails)."""
    return PORT_NUM.match(name) is not None


#: listing path -> its snapshot key (or None): a node's listing names the same few hundred paths as its peers', so
#: a process that reads thousands of captures looks each one up once (bounded: a hostile listing cannot grow it)
_FLAT_KEYS: Dict[str, Optional[str]] = {}
_FLAT_KEYS_MAX = 8192


def _flat_key(path: str) -> Optional[str]:
    """The snapshot key of one listing path when :func:`snapshot_sysfs` would read it (the same allowlist); else
    None. The ``<hca>/ports`` placeholder (an HCA with nothing readable) is kept."""
    try:
        return _FLAT_KEYS[path]
    except KeyError:
        pass
    key = _flat_key_of(path)
    if len(_FLAT_KEYS) < _FLAT_KEYS_MAX:
        _FLAT_KEYS[path] = key
    return key


def _flat_key_of(path: str) -> Optional[str]:
    for prefix in _FLAT_PREFIXES:
        if path.startswith(prefix):
            path = path[len(prefix) :]
            break
    parts = path.split("/")
    if not SAFE_NAME.match(parts[0]):
        return None
    n = len(parts)
    if n == 2:
        return path if parts[1] in HCA_ATTRS or parts[1] == "ports" else None
    if n < 4 or parts[1] != "ports" or not _port_dir(parts[2]):
        return None
    rest = parts[3:]
    if len(rest) == 1 and rest[0] in PORT_ATTRS:
        return path
    if len(rest) == 2 and "/".join(rest) == GID0:
        return path
    if len(rest) == 2 and rest[0] in COUNTER_DIRS and SAFE_COUNTER.match(rest[1]):
        return path
    return None


def _capped(snap: Dict[str, str]) -> Dict[str, str]:
    """``snap`` within the caps :func:`snapshot_sysfs` applies while reading: the first MAX_HCAS HCAs (natural
    order), MAX_PORTS ports an HCA (numeric order), MAX_COUNTERS names a counter directory (sorted)."""
    ports: Dict[str, set] = {}
    names: Dict[Tuple[str, str, str], set] = {}
    for key in snap:
        parts = key.split("/")
        if len(parts) >= 4:
            ports.setdefault(parts[0], set()).add(parts[2])
        if len(parts) == 5 and parts[3] in COUNTER_DIRS:
            names.setdefault((parts[0], parts[2], parts[3]), set()).add(parts[4])
    hca_names = {k.split("/", 1)[0] for k in snap}
    if (
        len(hca_names) <= MAX_HCAS
        and all(len(p) <= MAX_PORTS for p in ports.values())
        and all(len(v) <= MAX_COUNTERS for v in names.values())
    ):
        return snap  # within every cap (every real node): nothing to drop
    hcas = sorted(hca_names, key=natural_key)
    keep_hcas = set(hcas[:MAX_HCAS])
    keep_ports = {h: set(sorted(p, key=int)[:MAX_PORTS]) for h, p in ports.items()}
    keep_names = {k: set(sorted(v)[:MAX_COUNTERS]) for k, v in names.items()}
    out = {}
    for key, value in snap.items():
        parts = key.split("/")
        if parts[0] not in keep_hcas:
            continue
        if len(parts) >= 4 and parts[2] not in keep_ports[parts[0]]:
            continue
        if len(parts) == 5 and parts[3] in COUNTER_DIRS and parts[4] not in keep_names[(parts[0], parts[2], parts[3])]:
            continue
        out[key] = value
    return out


def snapshot_flat(
    text: str, source: Optional[str] = None, errors: Optional[List[Dict[str, Any]]] = None
) -> Dict[str, str]:
    """A flattened sysfs listing (``infiniband-sysfs.txt``; ``grep -r . */`` in the class directory:
    ``mlx5_0/fw_ver:28.41.1000``, with or without ``./``) as the mapping :func:`snapshot_sysfs` returns for the
    same attributes: the same allowlist, caps and value limit, so a listing and a tree of one node give equal
    HCA records.

    Lines of attributes outside the allowlist are skipped (``grep -r`` also lists ``uevent``, ``gid_attrs`` ...).
    A line that is not ``path:value``, an attribute listed twice with two values (the first is kept) and a
    listing cut short (no final newline: its last line is dropped) are ``parse`` entries in ``errors``; without
    an ``errors`` list they raise ParseError with the mapping as ``partial``. Raises ParseError when non-empty
    input has no ``path:value`` line at all.
    """
    if not isinstance(text, str):
        raise ParseError("input is not text", "sysfs_flat", source)
    rec = Records("sysfs_flat", source, DOMAIN, errors)
    snap: Dict[str, str] = {}
    lines = text.split("\n")
    last = lines.pop()  # "" after a final newline; else a line the listing was cut in
    saw_any = False
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if rec.too_long(line, lineno):
            continue
        path, sep, value = line.partition(":")
        if not sep:
            rec.add("not a 'path:value' line: %r" % line[:80], lineno)
            continue
        saw_any = True
        key = _flat_key(path.strip())
        if key is None:
            continue
        value = value[:MAX_ATTR_BYTES].strip()
        have = snap.get(key)
        if have is None:
            snap[key] = value
        elif have != value:
            rec.add("%s is listed twice, as %r and %r (the first is kept)" % (key, have[:40], value[:40]), lineno)
    if last.strip():
        rec.add("the listing ends without a newline: cut short? (its last line is not read)", len(lines) + 1)
    if not saw_any and text.strip():
        raise ParseError("no 'path:value' line found", "sysfs_flat", source, None)
    return rec.finish(_capped(snap))


def parse_sysfs_flat(text: str, source: Optional[str] = None) -> Dict[str, str]:
    """:func:`snapshot_flat` without an error list: a malformed line raises ParseError (``partial``: the rest)."""
    return snapshot_flat(text, source)


_HCA_RECORD_ATTRS = {"hca_type": "ca_type", "fw_ver": "fw_version", "board_id": "board_id", "node_guid": "node_guid"}
#: snapshot path -> what :func:`hcas_from_snapshot` takes from it (bounded, as _FLAT_KEYS)
_SNAP_PATHS: Dict[str, Optional[Tuple[str, Optional[int], Optional[str], Optional[str]]]] = {}


def _snap_path(path: str) -> Optional[Tuple[str, Optional[int], Optional[str], Optional[str]]]:
    """``(hca, port, kind, name)`` of a snapshot path: ``(hca, None, "hca", record key)`` for an HCA attribute the
    record takes, ``(hca, None, None, None)`` for another path of a valid HCA, ``(hca, port, "port", attribute)``
    (``gid0`` for ``gids/0``), ``(hca, port, counter directory, counter)``, ``(hca, port, None, None)`` for
    another path of a port; None for a path of no valid HCA (skipped whole)."""
    try:
        return _SNAP_PATHS[path]
    except KeyError:
        pass
    parts = path.split("/")
    hca = parts[0]
    where: Optional[Tuple[str, Optional[int], Optional[str], Optional[str]]] = (hca, None, None, None)
    if not SAFE_NAME.match(hca):
        where = None
    elif len(parts) == 2 and parts[1] in _HCA_RECORD_ATTRS:
        where = (hca, None, "hca", _HCA_RECORD_ATTRS[parts[1]])
    elif len(parts) >= 4 and parts[1] == "ports" and PORT_NUM.match(parts[2]):
        port, rest = int(parts[2]), parts[3:]
        where = (hca, port, None, None)
        if len(rest) == 1 and rest[0] in PORT_ATTRS:
            where = (hca, port, "port", rest[0])
        elif rest == ["gids", "0"]:
            where = (hca, port, "port", "gid0")
        elif len(rest) == 2 and rest[0] in COUNTER_DIRS:
            where = (hca, port, rest[0], rest[1])
    if len(_SNAP_PATHS) < _FLAT_KEYS_MAX:
        _SNAP_PATHS[path] = where
    return where


def hcas_from_snapshot(
    snap: Dict[str, str], source: Optional[str] = None, errors: Optional[List[Dict[str, Any]]] = None
) -> List[Dict[str, Any]]:
    """HCA records (docs/facts.md ``ib.hcas``) from a snapshot mapping.

    A port whose attributes cannot be read into a record is a ``parse`` entry in ``errors`` (the other ports
    and HCAs are kept); without an ``errors`` list it raises ParseError with the HCAs as ``partial``.
    """
    rec = Records("sysfs", source, DOMAIN, errors)
    hca_raw: Dict[str, Dict[str, Any]] = {}
    port_raw: Dict[Tuple[str, int], Dict[str, Any]] = {}
    counters: Dict[Tuple[str, int], Dict[str, Dict[str, int]]] = {}
    for path, value in snap.items():
        where = _snap_path(path)
        if where is None:
            continue
        hca, port, kind, name = where
        raw = hca_raw.setdefault(hca, {})
        if port is None:
            if kind == "hca":
                raw[name] = value
            continue
        key = (hca, port)
        praw = port_raw.setdefault(key, {})
        if kind == "port":
            praw[name] = value
        elif kind is not None:  # a counter directory
            n = to_int(value)
            if n is not None:
                counters.setdefault(key, {}).setdefault(kind, {})[name] = n
    hcas = []
    for hca in sorted(hca_raw, key=natural_key):
        ports = []
        for (h, pn), praw in sorted(port_raw.items(), key=lambda kv: kv[0][1]):  # a listing may be in any order
            if h != hca:
                continue
            by_dir = counters.get((h, pn), {})
            merged = dict(by_dir.get("counters", {}))
            for name, val in by_dir.get("hw_counters", {}).items():
                merged["hw_" + name if name in merged else name] = val
            with rec.at(None):
                ports.append(port_record(pn, praw, dict(sorted(merged.items()))))
        with rec.at(None):
            hcas.append(hca_record(hca, hca_raw[hca], ports))
    return rec.finish(hcas)


def read_sysfs_class(class_dir: str, confine: bool = False) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """HCA records and error records from a sysfs class directory (live, or in a capture: ``confine``)."""
    snap, errors = snapshot_sysfs(class_dir, confine)
    return hcas_from_snapshot(snap, class_dir, errors), errors


def flat_text(snap: Dict[str, str]) -> str:
    """A snapshot as the listing :func:`snapshot_flat` reads: ``./<path>:<value>`` lines, sorted, newline-ended.
    A value is one line (a newline inside one, never seen in an allowlisted attribute, becomes a space)."""
    lines = []
    for rel, value in sorted(snap.items()):
        parts = rel.split("/")
        if any(not p or p in (".", "..") for p in parts):
            continue
        lines.append("./%s:%s" % (rel, " ".join(value.splitlines())))
    return "".join(line + "\n" for line in lines)


def sysfs_listing(sysfs_root: str, timeout: Optional[float] = 30.0) -> Tuple[str, Dict[str, Any]]:
    """The allowlisted IB attributes of ``<sysfs_root>/sys/class/infiniband`` as the listing text of
    ``infiniband-sysfs.txt`` (:func:`flat_text`; empty when nothing was read), and the record
    :func:`capture_sysfs` returns (``file`` None: nothing is written here).

    The read runs in a child abandoned after ``timeout`` seconds (None: in this process).
    """
    out: Dict[str, Any] = {"hcas": [], "files": 0, "file": None, "collected_at": time.time(), "errors": []}
    class_dir = os.path.join(sysfs_root, _capture.SYSFS_IB)
    if timeout is None:
        snap, errors = snapshot_sysfs(class_dir)
    else:
        res = run_in_child(snapshot_sysfs, (class_dir,), timeout)
        if not res.get("ok"):
            kind = "timeout" if res.get("timed_out") else "internal"
            msg = f"reading {class_dir}: {res.get('error')}"
            out["errors"].append(error_record(DOMAIN, kind, msg, source="sysfs"))
            return "", out
        snap, errors = res["value"]
    out["errors"].extend(errors)
    text = flat_text(snap)
    if text:
        out["hcas"] = sorted({rel.split("/", 1)[0] for rel in snap}, key=natural_key)
        out["files"] = sum(1 for rel in snap if rel.split("/")[1:] != ["ports"])
    return text, out


def capture_sysfs(sysfs_root: str, dest_dir: str, timeout: Optional[float] = 30.0) -> Dict[str, Any]:
    """Save the allowlisted IB attributes of ``<sysfs_root>/sys/class/infiniband`` as one listing,
    ``<dest_dir>/infiniband-sysfs.txt`` (0600; never the whole tree, never through a link): one file a node
    instead of ~300, read back by :func:`snapshot_flat` into the same records as the tree.

    The read runs in a child abandoned after ``timeout`` seconds (None: in this process). Nothing is written
    when nothing was read. Returns ``{"hcas": [...names], "files": N attributes, "file": name or None,
    "collected_at": epoch, "errors": [...]}``.
    """
    text, out = sysfs_listing(sysfs_root, timeout)
    if not text:
        return out
    target = os.path.join(dest_dir, _capture.SYSFS_IB_FLAT)
    try:
        write_private_atomic(target, text)  # 0600 in 0700 dirs, never through a link
    except OSError as exc:
        out["errors"].append(error_record(DOMAIN, "internal", f"cannot write {target}: {exc}", "sysfs"))
        out["hcas"], out["files"] = [], 0
        return out
    out["file"] = _capture.SYSFS_IB_FLAT
    return out
