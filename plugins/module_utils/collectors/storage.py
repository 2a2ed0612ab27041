"""The parallel-storage facts (docs/storage.md): Lustre, IBM Storage Scale (GPFS) and NFS, seen from one client.

``collect_storage(capture_dir=None, run=None, options=None)`` reads a cluster capture directory (docs/capture.md
"Storage files": ``lfs-df[-<flags>].txt``, ``lfs-check-<what>.txt``, ``lctl-health_check.txt``, ``lctl-dl.txt``,
``mmhealth[-<what>].txt``, ``mmlsdisk[-<fs>].txt``, ``mmdf[-<fs>].txt``, ``nfsstat[-<flags>].txt``, ``mounts.txt``;
an absent file is a part that was not captured (``unknown``, never an error), an unreadable or garbled one an error
entry, and a malformed line costs that line) or asks the live client through ``run`` (the hang-proof
``_runner.run_command``: every call has a timeout, a hung filesystem costs one timeout and never hangs the play).
Mounts are probed with the node collector's hang-proof ``_node.probe_path`` (statfs in a killed-after-timeout
child). The opt-in throughput and metadata probe is in ``_storage_probe``.

Result: ``{filesystems: [{name, type, mount, targets: [{name, kind, index, used_pct, inode_used_pct, state,
status, availability, flags, detail}], used_pct, inode_used_pct, responsive, error}], servers: [{name, kind, fs,
state, error, status, node, component, entity}], events: [{node, component, entity, event, severity, type,
message, identifier, since}], throughput, nfs_rpc, unknown: [{part, files, message}], errors, sources}``.

The facts say what the storage printed, not how bad it is: the storage checks grade each state with the policy's
``thresholds.storage.states`` table. Target ``state`` is ``active`` when lfs lists it with numbers or mmlsdisk
says ``up``; otherwise the tool's word (``inactive``, ``unavailable``, ``error``, ``missing``, ``<status>/<avail>``).
Server ``state`` is ``active`` (lfs check active, health_check healthy, mmhealth HEALTHY) or the tool's word
(``inactive``, ``down``, ``unhealthy``, ``lbug``, ``not_up``, the lower-case mmhealth status).

Runs on managed nodes (Python 3.8+). Stdlib only, no Ansible imports.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import capture as _capture
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import storage as sp
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import storage_gpfs as sg
from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    ParseError,
    error_record,
    internal_error,
)
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.node import parse_mounts
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command, which

DOMAIN = "storage"
DEFAULT_TIMEOUT = 10.0
#: Filesystem types probed without being named (network and parallel filesystems).
NETWORK_FSTYPES = ("lustre", "gpfs", "nfs", "nfs4", "beegfs", "cifs", "smb3")
#: GPFS commands live outside PATH.
GPFS_BIN = "/usr/lpp/mmfs/bin"
#: The words each GPFS output can print (cluster-formats.md 6.1 and 6.3: gpfs_exporter's lists, IBM's UNKNOWN).
#: A word outside them is recorded as a parse error (unknown, not broken); how bad each known word is, is policy.
GPFS_STATUS = (
    "HEALTHY",
    "TIPS",
    "DISABLED",
    "CHECKING",
    "STARTING",
    "DEGRADED",
    "FAILED",
    "DEPEND",
    "STOPPED",
    "SUSPENDED",
    "UNKNOWN",
)
NSD_STATUS = ("ready", "suspended", "to be emptied", "being emptied", "emptied", "replacing", "replacement")
NSD_AVAILABILITY = ("up", "down", "recovering", "unrecovered")
_SAFE_FS = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")

Runner = Callable[..., Any]


def _result() -> Dict[str, Any]:
    return {
        "filesystems": [],
        "servers": [],
        "events": [],
        "throughput": None,
        "nfs_rpc": None,
        "unknown": [],
        "errors": [],
        "sources": [],
    }


class _Facts:
    """The result being built: filesystems by key, servers, errors, sources, the parts read."""

    def __init__(self) -> None:
        self.out = _result()
        self.by_key: Dict[str, Dict[str, Any]] = {}
        self.parts: set = set()

    def fs(self, name: Optional[str], fstype: str, mount: Optional[str]) -> Dict[str, Any]:
        key = "%s:%s" % (fstype, name or mount)
        rec = self.by_key.get(key)
        if rec is None:
            rec = {
                "name": name or mount,
                "type": fstype,
                "mount": mount,
                "targets": [],
                "used_pct": None,
                "inode_used_pct": None,
                "responsive": None,
                "error": None,
            }
            self.by_key[key] = rec
            self.out["filesystems"].append(rec)
        if mount and not rec["mount"]:
            rec["mount"] = mount
        return rec

    def target(self, fs: Dict[str, Any], name: str, kind: Optional[str]) -> Dict[str, Any]:
        for t in fs["targets"]:
            if t["name"] == name:
                return t
        t = {
            "name": name,
            "kind": kind,
            "index": None,
            "used_pct": None,
            "inode_used_pct": None,
            "state": "active",
            "flags": [],
            "detail": None,
        }
        fs["targets"].append(t)
        return t

    def server(self, name: str, kind: Optional[str], fs: Optional[str], state: str, error: Optional[str], **more: Any):
        rec = {"name": name, "kind": kind, "fs": fs, "state": state, "error": error}
        rec.update(more)
        self.out["servers"].append(rec)

    def error(self, kind: str, message: str, source: Optional[str] = None) -> None:
        self.out["errors"].append(error_record(DOMAIN, kind, message, source=source))


# ---------------------------------------------------------------------------------------------------------------
# From parsed outputs into the facts (one function per source; shared by the capture and the live path)
# ---------------------------------------------------------------------------------------------------------------


def _add_lfs_df(f: _Facts, text: str, source: str, mode: Optional[str] = None) -> None:
    try:
        listing = sp.parse_lfs_df(text, source, f.out["errors"], mode)
    except ParseError:
        f.parts.add("lustre:inodes" if mode == "inodes" else "lustre:space")  # captured, garbled: an error
        raise
    for dfs in listing:
        fs = f.fs(dfs["name"], "lustre", dfs["mount"])
        inodes = dfs["mode"] == "inodes"
        f.parts.add("lustre:inodes" if inodes else "lustre:space")
        key = "inode_used_pct" if inodes else "used_pct"
        if dfs["summary"]:
            fs[key] = dfs["summary"]["used_pct"]
        for t in dfs["targets"]:
            new = not any(x["name"] == t["name"] for x in fs["targets"])
            rec = f.target(fs, t["name"], t["kind"])
            rec["index"] = t["index"] if t["index"] is not None else rec["index"]
            if t["state"] == "missing":  # left out of this listing: only news when no other listing has it
                if new:
                    rec.update(state="missing", detail=t["detail"])
                continue
            if rec["state"] == "missing":
                rec.update(state="active", detail=None)
            rec[key] = t["used_pct"]
            rec["flags"] = sorted(set(rec["flags"]) | set(t["flags"]))
            if t["state"] != "active":
                rec.update(state=t["state"], detail=t["detail"])


def _add_lfs_check(f: _Facts, text: str, source: str) -> None:
    f.parts.add("lustre:servers")
    states = {"active": "active", "inactive": "inactive"}
    for s in sp.parse_lfs_check(text, source, f.out["errors"]):
        state = states.get(s["state"], "down")
        name = s["target"] if s["kind"] in ("MDT", "OST") else s["name"]
        f.server(name, s["kind"], s["fs"], state, s["error"], status=s["state"])


def _add_health_check(f: _Facts, text: str, source: str) -> None:
    f.parts.add("lustre:health")
    hc = sp.parse_health_check(text, source, f.out["errors"])
    if hc["healthy"]:
        f.server("lustre:health_check", "health_check", None, "active", None, status="healthy")
        return
    detail = "LBUG" if hc["lbug"] else ("unhealthy: " + ", ".join(hc["devices"]) if hc["devices"] else "NOT HEALTHY")
    state = "lbug" if hc["lbug"] else "unhealthy"
    f.server("lustre:health_check", "health_check", None, state, detail, status=detail, devices=hc["devices"])


def _add_lctl_dl(f: _Facts, text: str, source: str) -> None:
    for d in sp.parse_lctl_dl(text, source, f.out["errors"]):
        if d["kind"] in ("MDT", "OST") and d["status"] != "UP":
            f.server(
                d["target"],
                d["kind"],
                d["fs"],
                "not_up",
                "lctl dl: device %s is %s" % (d["name"], d["status"]),
                status=d["status"],
            )


def _add_mmhealth(f: _Facts, text: str, source: str) -> None:
    f.parts.add("gpfs:health")
    h = sg.parse_mmhealth(text, source, f.out["errors"])
    for s in h["states"]:
        status = s["status"]
        if status not in GPFS_STATUS:  # a word mmhealth is not documented to print: unknown, not broken
            f.error(
                "parse",
                "mmhealth: %s %s has status %s (not a known health state)" % (s["component"], s["entity"], status),
                source,
            )
            continue
        f.server(
            "gpfs:%s:%s%s" % (s["node"], s["component"], "" if s["entity"] == s["node"] else "/%s" % s["entity"]),
            "gpfs:%s" % (s["component"] or "").lower(),
            None,
            "active" if status == "HEALTHY" else status.lower(),
            None if status == "HEALTHY" else "mmhealth: %s %s is %s" % (s["component"], s["entity"], status),
            status=status,
            node=s["node"],
            component=s["component"],
            entity=s["entity"],
            entity_type=s["entity_type"],
            since=s["since"],
        )
    for e in h["events"]:
        if not e["hidden"]:
            f.out["events"].append({k: e[k] for k in e if k not in ("hidden", "entity_type")})
    for row in h["summary"]:
        failed, degraded = row.get("failed") or 0, row.get("degraded") or 0
        status = "FAILED" if failed else ("DEGRADED" if degraded else "HEALTHY")
        f.server(
            "gpfs:cluster:%s" % row["component"],
            "gpfs_cluster:%s" % (row["component"] or "").lower(),
            None,
            "active" if status == "HEALTHY" else status.lower(),
            None
            if status == "HEALTHY"
            else "mmhealth cluster show: %s: %d of %s failed, %d degraded"
            % (row["component"], failed, row.get("total"), degraded),
            status=status,
            component=row["component"],
            counts={k: row.get(k) for k in ("total", "failed", "degraded", "healthy", "other")},
        )


def _add_mmlsdisk(f: _Facts, text: str, source: str, fsname: str) -> None:
    f.parts.add("gpfs:disks")
    fs = f.fs(fsname, "gpfs", None)
    for d in sg.parse_mmlsdisk(text, source, f.out["errors"]):
        status, avail = d["status"] or "", d["availability"] or ""
        if status not in NSD_STATUS or avail not in NSD_AVAILABILITY:  # unknown words: unknown, not broken
            f.error(
                "parse",
                "mmlsdisk %s: NSD %s has status %r, availability %r (not known states)"
                % (fsname, d["name"], status[:40], avail[:40]),
                source,
            )
            continue
        t = f.target(fs, d["name"] or "?", "NSD")
        t.update(status=status, availability=avail)
        t["state"] = "active" if (status, avail) == ("ready", "up") else "%s/%s" % (status, avail)


def _add_mmdf(f: _Facts, text: str, source: str, fsname: str) -> None:
    f.parts.add("gpfs:space")
    fs = f.fs(fsname, "gpfs", None)
    df = sg.parse_mmdf(text, source, f.out["errors"])
    fs["used_pct"] = df["used_pct"]
    if df["inodes"]:
        fs["inode_used_pct"] = df["inodes"]["used_pct"]
    for n in df["nsds"]:
        f.target(fs, n["name"] or "?", "NSD")["used_pct"] = n["used_pct"]


def _add_mounts(f: _Facts, text: str, source: str) -> None:
    for m in parse_mounts(text):
        if m["fstype"] not in NETWORK_FSTYPES:
            continue
        dev = m["device"]
        if m["fstype"] == "lustre":  # 10.0.0.1@o2ib:/scratch -> scratch
            name = dev.rsplit(":/", 1)[-1].split("/")[0]
        elif m["fstype"] == "gpfs":  # /dev/scratch or scratch
            name = os.path.basename(dev)
        else:  # server:/export, as nfsstat -m names it
            name = dev
        fs = f.fs(name, _fstype(m["fstype"]), m["path"])
        fs.setdefault("options", sp.parse_options(m["options"]))


def _add_nfsstat(f: _Facts, text: str, source: str) -> None:
    if "Client rpc stats:" in text:  # nfsstat -c / -rc saved under the -m name: the content decides
        _add_nfsstat_rpc(f, text, source)
        return
    for m in sp.parse_nfsstat_m(text, source, f.out["errors"]):
        fs = f.fs("%s:%s" % (m["server"], m["export"]), "nfs", m["mount"])
        fs["options"] = m["options"]


def _add_nfsstat_rpc(f: _Facts, text: str, source: str) -> None:
    f.out["nfs_rpc"] = sp.parse_nfsstat_rpc(text, source)


def _fstype(fstype: str) -> str:
    return "nfs" if fstype in ("nfs", "nfs4") else fstype


def _gpfs_name(name: str, prefix: str) -> str:
    """``mmdf-scratch.txt`` -> ``scratch``; ``mmdf.txt`` -> ``gpfs``."""
    stem = name[: -len(".txt")]
    return stem[len(prefix) + 1 :] if stem.startswith(prefix + "-") else "gpfs"


def _df_mode(name: str) -> Optional[str]:
    """``lfs-df-i.txt`` / ``lfs-df-ih.txt``: a headerless (``-N``) listing of these is inodes."""
    flags = name[len("lfs-df") : -len(".txt")].lstrip("-")
    return "inodes" if "i" in flags else None


def _plain(adder: Callable[..., None]) -> Callable[..., None]:
    """An adder that needs no file name, called as the capture calls every adder: ``(facts, text, source, name)``."""
    return lambda f, text, source, _name: adder(f, text, source)


#: capture file name pattern -> how its facts are added: ``(facts, text, source, file name)``
#: (docs/capture.md "Storage files"; the content decides where it can: a header, "Client rpc stats:")
CAPTURE_FILES = (
    (r"mounts\.txt", _plain(_add_mounts)),
    (r"nfsstat(-[a-z]{1,4})?\.txt", lambda f, t, s, n: (_add_nfsstat_rpc if "c" in n[7:] else _add_nfsstat)(f, t, s)),
    (r"lfs-df(-[A-Za-z]{1,6})?\.txt", lambda f, t, s, n: _add_lfs_df(f, t, s, _df_mode(n))),
    (r"lfs-check(-(servers|osts|mdts|mgts|all))?\.txt", _plain(_add_lfs_check)),
    (r"(lctl-(get_param-)?)?health_check\.txt", _plain(_add_health_check)),
    (r"lctl-dl(-t)?\.txt", _plain(_add_lctl_dl)),
    (r"mmhealth(-[a-z-]{1,40})?\.txt", _plain(_add_mmhealth)),
    (r"mmlsdisk(-[A-Za-z0-9_.-]{1,64})?\.txt", lambda f, t, s, n: _add_mmlsdisk(f, t, s, _gpfs_name(n, "mmlsdisk"))),
    (r"mmdf(-[A-Za-z0-9_.-]{1,64})?\.txt", lambda f, t, s, n: _add_mmdf(f, t, s, _gpfs_name(n, "mmdf"))),
)

#: The parts of each storage family; with any part of a family captured, a part not captured is ``unknown``.
PARTS = (
    ("lustre:space", "lfs df or lfs df -h (lfs-df.txt)"),
    ("lustre:inodes", "lfs df -i (lfs-df-i.txt)"),
    ("lustre:servers", "lfs check servers (lfs-check-servers.txt)"),
    ("lustre:health", "lctl get_param health_check (lctl-health_check.txt)"),
    ("gpfs:health", "mmhealth node show -Y (mmhealth.txt)"),
    ("gpfs:disks", "mmlsdisk <fs> -Y (mmlsdisk-<fs>.txt)"),
    ("gpfs:space", "mmdf <fs> -Y (mmdf-<fs>.txt)"),
)


def _feed(f: _Facts, adder: Callable[..., None], text: str, source: str, *extra: Any) -> None:
    """One source into the facts behind an error boundary (a bad source is an error entry, never a raise)."""
    try:
        adder(f, text, source, *extra)
    except ParseError as exc:
        f.out["errors"].append(exc.to_error(DOMAIN))
    except Exception as exc:  # noqa: BLE001 - collector boundary
        f.out["errors"].append(internal_error(DOMAIN, exc))


def _read_capture(f: _Facts, capture_dir: str, name: str) -> Optional[str]:
    try:
        text = _capture.read(capture_dir, name)
    except ParseError as exc:
        f.out["errors"].append(exc.to_error(DOMAIN, "unreadable"))
        return None
    if text is not None:
        f.out["sources"].append("capture:%s" % name)
    return text


def _part_of(name: str) -> Optional[str]:
    """The part a capture file holds by its name (for a file that could not be read: captured, not unknown)."""
    for prefix, part in (
        ("lfs-df", "lustre:inodes" if name.startswith("lfs-df") and _df_mode(name) else "lustre:space"),
        ("lfs-check", "lustre:servers"),
        ("lctl-dl", None),
        ("lctl-", "lustre:health"),
        ("health_check", "lustre:health"),
        ("mmhealth", "gpfs:health"),
        ("mmlsdisk", "gpfs:disks"),
        ("mmdf", "gpfs:space"),
    ):
        if name.startswith(prefix):
            return part
    return None


def _unknown_parts(f: _Facts) -> None:
    """A part of a captured family that was not captured: unknown for that part (never an error, never healthy)."""
    families = {p.split(":", maxsplit=1)[0] for p in f.parts if p}
    for part, what in PARTS:
        if part.split(":", maxsplit=1)[0] in families and part not in f.parts:
            f.out["unknown"].append(
                {"part": part, "files": what, "message": "%s was not captured: %s is unknown" % (what, part)}
            )


def _collect_capture(capture_dir: str) -> Dict[str, Any]:
    f = _Facts()
    if not os.path.isdir(capture_dir):
        f.error("missing", "capture directory %s does not exist" % capture_dir, capture_dir)
        return f.out
    names = sorted(os.listdir(capture_dir))
    for pattern, adder in CAPTURE_FILES:
        for name in names:
            if not re.match(r"^%s$" % pattern, name):
                continue
            text = _read_capture(f, capture_dir, name)
            if text is None:  # listed, so it exists: unreadable (an error entry), not "not captured"
                f.parts.add(_part_of(name) or "")
                continue
            _feed(f, adder, text, _capture.path(capture_dir, name), name)
    _unknown_parts(f)
    return f.out


# ---------------------------------------------------------------------------------------------------------------
# Live
# ---------------------------------------------------------------------------------------------------------------


def _run_tool(f: _Facts, run: Runner, argv: List[str], timeout: float, ok_rcs=(0,), stderr=False) -> Optional[str]:
    """Run one bounded command: its stdout (``stderr``: stdout and stderr, for tools that print their evidence
    there), or None and an error entry when it timed out or could not run. A non-zero exit outside ``ok_rcs``
    is an error entry too, and what it printed on stdout is still read (partial evidence is evidence)."""
    res = run(argv, timeout=timeout)
    cmd = " ".join([os.path.basename(argv[0])] + list(argv[1:]))
    if res.timed_out:
        f.error("timeout", "%s did not answer within %.0f s (a hung filesystem or server)" % (cmd, timeout), cmd)
        return None
    if res.error:
        f.error("tool_error", res.describe(), cmd)
        return None
    text = (res.stdout or "") + (res.stderr or "") if stderr else (res.stdout or "")
    if res.rc not in ok_rcs:
        f.error("tool_error", res.describe(), cmd)
        if not (res.stdout or "").strip():
            return None
    f.out["sources"].append("live:%s" % cmd)
    return text


def _tool(name: str) -> Optional[str]:
    return which(name) or which(name, GPFS_BIN)


def _live_lustre(f: _Facts, run: Runner, timeout: float) -> None:
    lfs, lctl = _tool("lfs"), _tool("lctl")
    if lfs:
        for argv, adder in (([lfs, "df"], _add_lfs_df), ([lfs, "df", "-i"], _add_lfs_df)):
            text = _run_tool(f, run, argv, timeout)
            if text is not None:
                _feed(f, adder, text, " ".join(argv))
        # lfs check exits non-zero when a server does not answer: its lines are the evidence
        text = _run_tool(f, run, [lfs, "check", "servers"], timeout, (0, 1, 2, 11, 107, 108, 255), stderr=True)
        if text is not None:
            _feed(f, _add_lfs_check, text, "lfs check servers")
    if lctl:
        for argv, adder in (
            ([lctl, "get_param", "health_check"], _add_health_check),
            ([lctl, "dl", "-t"], _add_lctl_dl),
        ):
            text = _run_tool(f, run, argv, timeout)
            if text is not None:
                _feed(f, adder, text, " ".join(argv[1:]))


def _live_gpfs(f: _Facts, run: Runner, timeout: float, devices: List[str]) -> None:
    mmhealth = _tool("mmhealth")
    if mmhealth:
        text = _run_tool(f, run, [mmhealth, "node", "show", "-Y"], timeout)
        if text is not None:
            _feed(f, _add_mmhealth, text, "mmhealth node show -Y")
    for dev in devices:
        fsname = os.path.basename(dev)
        if not _SAFE_FS.match(fsname):
            f.error("parse", "GPFS device name %r refused (not a plain name)" % dev[:80], "/proc/self/mounts")
            continue
        for tool, adder in (("mmlsdisk", _add_mmlsdisk), ("mmdf", _add_mmdf)):
            exe = _tool(tool)
            if exe:
                text = _run_tool(f, run, [exe, fsname, "-Y"], timeout)
                if text is not None:
                    _feed(f, adder, text, "%s %s -Y" % (tool, fsname), fsname)


def _probe_mounts(f: _Facts, paths: List[Dict[str, Any]], timeout: float) -> None:
    """statfs every mount in a killed-after-timeout child (the node collector's hang-proof probe), in parallel."""
    from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import (
        node as _node,
    )  # the node domain's probe

    if not paths:
        return
    probed = _node._probe_all([p["mount"] for p in paths], timeout)
    for fs in paths:
        res = probed.get(fs["mount"]) or {}
        fs["responsive"] = res.get("responsive")
        if res.get("error"):
            fs["error"] = res["error"]
        if res.get("free_pct") is not None and fs.get("used_pct") is None:
            fs["used_pct"] = round(100.0 - float(res["free_pct"]), 1)
    for fs in paths:
        if fs["responsive"] and fs.get("inode_used_pct") is None:
            fs["inode_used_pct"] = _inode_pct(fs["mount"], timeout)


def _inode_pct(path: str, timeout: float) -> Optional[float]:
    """Inode use of ``path`` (``stat -f``: total and free inodes), bounded; None when unknown (e.g. btrfs: 0)."""
    exe = which("stat")
    if not exe:
        return None
    res = run_command([exe, "-f", "-c", "%c %d", "--", path], timeout=timeout)
    parts = res.stdout.split() if res.ok else []
    if len(parts) != 2 or not all(p.isdigit() for p in parts) or int(parts[0]) <= 0:
        return None
    total, free = int(parts[0]), int(parts[1])
    return round(100.0 * (total - free) / total, 1)


def _collect_live(run: Runner, options: Dict[str, Any]) -> Dict[str, Any]:
    f = _Facts()
    timeout = float(options.get("timeout_s") or DEFAULT_TIMEOUT)
    root = options.get("root") or "/"
    table_text = None
    for rel in ("proc/self/mounts", "proc/mounts"):
        try:
            with open(os.path.join(root, rel), "rb") as fh:
                table_text = fh.read(4 * 1024 * 1024).decode("utf-8", errors="replace")
            break
        except OSError:
            continue
    if table_text is None:
        f.error("missing", "no mount table (/proc/self/mounts)", "/proc/self/mounts")
        table: List[Dict[str, str]] = []
    else:
        table = parse_mounts(table_text)
        f.out["sources"].append("live:/proc/self/mounts")
        _add_mounts(f, table_text, "/proc/self/mounts")
    fstypes = {m["fstype"] for m in table}
    if "lustre" in fstypes or options.get("lustre"):
        _live_lustre(f, run, timeout)
    gpfs = [m["device"] for m in table if m["fstype"] == "gpfs"]
    if gpfs or options.get("gpfs"):
        _live_gpfs(f, run, timeout, gpfs)
    nfsstat = which("nfsstat")
    if nfsstat and fstypes & {"nfs", "nfs4"}:
        for argv, adder in (([nfsstat, "-m"], _add_nfsstat), ([nfsstat, "-c"], _add_nfsstat_rpc)):
            text = _run_tool(f, run, argv, timeout)
            if text is not None:
                _feed(f, adder, text, " ".join(argv[1:]))
    by_path = {m["path"]: m for m in table}
    for path in options.get("mounts") or []:
        m = by_path.get(path)
        if m is None:
            f.error("missing", "%s is not a mount point" % path, path)
            continue
        if m["fstype"] not in NETWORK_FSTYPES:
            f.fs(path, _fstype(m["fstype"]), path)
    _probe_mounts(f, [fs for fs in f.out["filesystems"] if fs["mount"]], timeout)
    return f.out


def collect_storage(
    capture_dir: Optional[str] = None, run: Optional[Runner] = None, options: Optional[Dict[str, Any]] = None
) -> Dict[str, Any]:
    """The storage facts from ``capture_dir`` or the live client (see the module docstring).

    ``run``: the runner of the client commands (``argv, timeout=`` -> a ``_runner.CommandResult``; default
    ``_runner.run_command``). Mount probes and the throughput probe always use the hang-proof runner itself.

    ``options``: ``timeout_s`` (each command and mount probe, default 10), ``mounts`` (local mount points whose
    capacity is reported too), ``lustre``/``gpfs`` (run those clients' commands even without a mounted
    filesystem), ``root`` (read another root's /proc, tests) and ``probe`` (the opt-in throughput and metadata
    probe, ``_storage_probe.run_probe``; live only). Never raises: a bug is an ``internal`` error entry.
    """
    opts = options if isinstance(options, dict) else {}
    try:
        if capture_dir:
            out = _collect_capture(capture_dir)
        else:
            out = _collect_live(run or run_command, opts)
            if isinstance(opts.get("probe"), dict):
                from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import (
                    storage_probe as _storage_probe,
                )

                out["throughput"] = _storage_probe.run_probe(opts["probe"], out["errors"])
        return out
    except Exception as exc:  # noqa: BLE001 - collector boundary: report, never raise
        out = _result()
        out["errors"].append(internal_error(DOMAIN, exc))
        return out
