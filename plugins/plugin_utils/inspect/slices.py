# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sliced inspections that still see the whole cluster (docs/scale-out.md).

Under AWX job slicing each slice (its own ansible-playbook run, on its own execution node) evaluates its own
nodes exactly as an unsliced run does and hands them to :func:`write_slice`: one transaction in the shared store
(``_db``: the embedded SQLite of one controller, PostgreSQL across execution nodes). The merge step reads every
node of the run group with :func:`load_group`, which refuses an incomplete or inconsistent group by name (a
slice missing, a host written twice, a host of the inventory that no slice inspected), and then runs the cluster
correlation and the reports over all of them (``_inspect.finish_report``).

A run group names one sliced run (``gpuops_run_group``; under AWX the workflow hands it to every slice and to
the merge). A slice is named by ``gpuops_slice`` (its number) or, under AWX, its job id. Rewriting a slice (a
rerun after a failure) replaces its rows; a slice killed before its commit leaves none.
"""

from __future__ import annotations

import json
import re
import socket
import time
import zlib
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

try:
    import sqlalchemy as sa
except ImportError:  # the sanity import test; open_store raises a clear StoreError without it
    sa = None

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import utcnow
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import cluster as _cluster, pipeline as _inspect
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import slices_schema

GROUP_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}$")
SLICE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: What the merge needs of each evaluated node (the cluster correlation and the report): the loop's entry.
NODE_KEYS = (
    "findings",
    "status",
    "status_reason",
    "domains",
    "facts",
    "rack",
    "leaf",
    "power",
    "mode",
    "policy_hash",
    "baseline",
)
_CHUNK = 200
_SHOW = 10
_TABLES: Dict[str, Any] = {}


class SliceError(Exception):
    """A slice or a run group that cannot be written or merged (bad name, missing slice, duplicate host ...)."""


def _tables() -> Dict[str, Any]:
    if not _TABLES:
        meta = slices_schema.define(sa.MetaData())
        _TABLES.update(meta.tables)
    return _TABLES


def check_group(group: Any) -> str:
    """The run group id, validated (letters, digits, ``_.@+-``; at most 128 characters)."""
    if not isinstance(group, str) or not GROUP_RE.match(group):
        raise SliceError(
            "gpuops_run_group must be 1-128 letters, digits or _.@+- starting with a letter or digit, got %r" % (group,)
        )
    return group


def check_slice(slice_id: Any) -> str:
    """The slice name (a number or an AWX job id), validated."""
    slice_id = str(slice_id) if isinstance(slice_id, int) and not isinstance(slice_id, bool) else slice_id
    if not isinstance(slice_id, str) or not SLICE_RE.match(slice_id):
        raise SliceError(
            "gpuops_slice must be 1-64 letters, digits or _.- (e.g. the slice number), got %r" % (slice_id,)
        )
    return slice_id


def encode(entry: Dict[str, Any]) -> bytes:
    """A node entry as compressed JSON (only :data:`NODE_KEYS`)."""
    doc = {key: entry.get(key) for key in NODE_KEYS}
    return zlib.compress(json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str).encode("utf-8"), 6)


def decode(blob: bytes) -> Dict[str, Any]:
    """A node entry :func:`encode` wrote, read back from the store: ValueError (zlib.error, or _safejson's: not
    JSON, nested too deep, larger than the budget once inflated) for anything else."""
    inflater = zlib.decompressobj()
    data = inflater.decompress(bytes(blob), _safejson.DEFAULT_MAX_BYTES + 1)
    if inflater.unconsumed_tail:
        raise _safejson.JsonBudgetError(
            "slice entry refused: larger than %d bytes once inflated" % _safejson.DEFAULT_MAX_BYTES
        )
    return _safejson.loads(data, what="slice entry")


def write_slice(
    store: Any,
    group: str,
    slice_id: Any,
    nodes: Dict[str, Dict[str, Any]],
    meta: Optional[Dict[str, Any]] = None,
    on_chunk: Optional[Callable[[int], None]] = None,
) -> Dict[str, Any]:
    """Write one slice's evaluated nodes in ONE transaction (replacing an earlier write of the same slice).

    ``meta``: ``slice_count`` (what AWX was told), ``started_at`` (epoch), ``policy_hash``. ``on_chunk`` is called
    with the number of nodes inserted so far after each batch (progress; the tests kill a writer there).
    Returns ``{group, slice, hosts, bytes}``.
    """
    group, slice_id = check_group(group), check_slice(slice_id)
    meta = meta or {}
    t = _tables()
    rows = [
        {"group_id": group, "slice": slice_id, "host": str(host), "doc": encode(nodes[host])} for host in sorted(nodes)
    ]
    now = time.time()
    with store.begin(lock="slices:%s" % group) as conn:
        for name in ("slice_nodes", "slice_runs"):
            table = t[name]
            conn.execute(table.delete().where(table.c.group_id == group, table.c.slice == slice_id))
        for start in range(0, len(rows), _CHUNK):
            conn.execute(t["slice_nodes"].insert(), rows[start : start + _CHUNK])
            if on_chunk is not None:
                on_chunk(min(start + _CHUNK, len(rows)))
        conn.execute(
            t["slice_runs"].insert(),
            {
                "group_id": group,
                "slice": slice_id,
                "slice_count": meta.get("slice_count"),
                "started_at": float(meta.get("started_at") or now),
                "finished_at": now,
                "host_count": len(rows),
                "controller": socket.gethostname()[:255],
                "policy_hash": meta.get("policy_hash"),
            },
        )
    return {"group": group, "slice": slice_id, "hosts": len(rows), "bytes": sum(len(r["doc"]) for r in rows)}


def _names(items: Iterable[str]) -> str:
    items = sorted(items)
    return ", ".join(items[:_SHOW]) + (" and %d more" % (len(items) - _SHOW) if len(items) > _SHOW else "")


def _slice_order(name: str) -> Tuple[int, Any]:
    return (0, int(name)) if name.isdigit() else (1, name)


def _check_slices(group: str, runs: List[Dict[str, Any]], expect: Optional[int]) -> None:
    """Refuse a group whose slices are fewer than expected (``expect``, else the slice count the slices were told)."""
    told = {r["slice_count"] for r in runs if r.get("slice_count")}
    if len(told) > 1:
        raise SliceError(
            "run group %s: its slices were told different slice counts (%s): two sliced runs share the group id"
            % (group, ", ".join(str(c) for c in sorted(told)))
        )
    want = expect or (told.pop() if told else None)
    names = sorted((r["slice"] for r in runs), key=_slice_order)
    if want is None or len(names) == want:
        return
    missing = ""
    if all(n.isdigit() for n in names):
        gone = [str(i) for i in range(1, want + 1) if str(i) not in names]
        missing = "; missing: %s" % ", ".join(gone) if gone else ""
    raise SliceError(
        "run group %s: %d of %d slices written (%s)%s: nothing was merged; rerun the missing slice(s), then the "
        "merge" % (group, len(names), want, ", ".join(names) or "none", missing)
    )


def load_group(
    store: Any, group: str, expect_slices: Optional[int] = None, hosts: Optional[Iterable[str]] = None
) -> Tuple[Dict[str, Dict[str, Any]], Dict[str, Any]]:
    """Every node of the run group: ``({host: entry}, {group, slices: [{slice, hosts, ...}], hosts})``.

    Refuses (``SliceError``, nothing merged) a group with no slice, fewer slices than ``expect_slices`` (else
    than the slice count the slices recorded), a host written by two slices, and, given ``hosts`` (the merge's
    inventory), a host no slice inspected or a host inspected that is not in it.
    """
    group = check_group(group)
    t = _tables()
    with store.read() as conn:
        runs = [
            dict(r._mapping)
            for r in conn.execute(sa.select(t["slice_runs"]).where(t["slice_runs"].c.group_id == group))
        ]
        sn = t["slice_nodes"]
        rows = conn.execute(sa.select(sn.c.slice, sn.c.host, sn.c.doc).where(sn.c.group_id == group)).all()
    if not runs:
        raise SliceError(
            "run group %s: no slice has written its nodes (wrong gpuops_run_group, another store, or every slice "
            "failed): nothing was merged" % group
        )
    _check_slices(group, runs, expect_slices)
    owner: Dict[str, List[str]] = {}
    for row in rows:
        owner.setdefault(row.host, []).append(row.slice)
    twice = {h: s for h, s in owner.items() if len(s) > 1}
    if twice:
        raise SliceError(
            "run group %s: %d host(s) written by more than one slice (%s): the slices overlap (two sliced runs "
            "share the group id, or the inventory changed between slices); nothing was merged"
            % (group, len(twice), _names("%s in slices %s" % (h, "+".join(sorted(s))) for h, s in twice.items()))
        )
    if hosts is not None:
        wanted = set(hosts)
        missing, extra = wanted - set(owner), set(owner) - wanted
        if missing:
            raise SliceError(
                "run group %s: %d host(s) of the inventory were not inspected by any slice: %s; nothing was merged"
                % (group, len(missing), _names(missing))
            )
        if extra:
            raise SliceError(
                "run group %s: %d inspected host(s) are not among the merge's targets: %s; run the merge over the "
                "same inventory and gpuops_targets as the slices" % (group, len(extra), _names(extra))
            )
    nodes = {}
    for row in rows:
        try:
            nodes[row.host] = decode(row.doc)
        except (ValueError, zlib.error) as exc:  # a stored entry that is not what encode wrote (issue 35)
            raise SliceError(
                "run group %s: the stored entry of %s cannot be read (%s); nothing was merged" % (group, row.host, exc)
            ) from None
    info = {
        "group": group,
        "hosts": len(nodes),
        "slices": [
            {k: r[k] for k in ("slice", "host_count", "started_at", "finished_at", "controller", "policy_hash")}
            for r in sorted(runs, key=lambda r: _slice_order(r["slice"]))
        ],
    }
    return nodes, info


def prune(store: Any, keep_s: float = 7 * 86400, now: Optional[float] = None) -> int:
    """Delete the run groups whose newest slice finished more than ``keep_s`` ago; returns how many."""
    cutoff = (now if now is not None else time.time()) - keep_s
    t = _tables()
    sr = t["slice_runs"]
    with store.begin(lock="slices-prune") as conn:
        newest = sa.select(sr.c.group_id).group_by(sr.c.group_id).having(sa.func.max(sr.c.finished_at) < cutoff)
        old = [r[0] for r in conn.execute(newest)]
        for name in ("slice_nodes", "slice_runs"):
            table = t[name]
            for start in range(0, len(old), _CHUNK):
                conn.execute(table.delete().where(table.c.group_id.in_(old[start : start + _CHUNK])))
    return len(old)


def _host_policy(base: Dict[str, Any], host_over: Any, cache: Dict[str, Any]) -> Dict[str, Any]:
    """The host's merged policy (as the slice evaluated it: ``_inspect._read_hosts``)."""
    if not host_over:
        return base
    key = json.dumps(host_over, sort_keys=True, default=str)
    if key not in cache:
        cache[key] = _policy.merge_policy(base, host_over)
    return cache[key]


def merge_report(
    nodes: Dict[str, Dict[str, Any]],
    hosts: Dict[str, Dict[str, Any]],
    policy_overrides: Optional[Dict[str, Any]] = None,
    platform: Optional[Dict[str, Any]] = None,
    include_facts: bool = True,
    now: Any = None,
) -> Dict[str, Any]:
    """report.json's dict of a sliced run: the slices' evaluated ``nodes`` (:func:`load_group`) finished exactly as
    ``_inspect.inspect_nodes`` finishes an unsliced run: the platform checks' node findings join their nodes (whose
    status is then assessed again, as the unsliced loop does), then the cluster correlation and the report.

    ``hosts``: the merge's per-host entries (``node_class``, ``policy_overrides``), as for ``inspect_nodes``.
    """
    now = now or utcnow()
    base = _policy.merge_policy(_policy.DEFAULT_POLICY, policy_overrides or {})
    _policy.validate_policy(base)
    platform_cluster, platform_nodes = _inspect._platform_findings(
        platform, base, now, nodes, _inspect.slurm_names(hosts)
    )
    cache: Dict[str, Any] = {}
    for host, extra in platform_nodes.items():
        n = nodes[host]
        n["findings"] = list(n.get("findings") or []) + extra
        policy = _host_policy(base, (hosts.get(host) or {}).get("policy_overrides"), cache)
        n["status"], n["status_reason"] = _cluster.node_assessment(
            n["findings"], n.get("facts"), policy, n.get("domains")
        )
    return _inspect.finish_report(
        nodes, hosts, base, now, include_facts=include_facts, platform=platform, platform_cluster=platform_cluster
    )


def _count(value: Any, name: str) -> Optional[int]:
    if value in (None, "", 0, "0"):
        return None
    try:
        number = int(str(value))
    except ValueError:
        number = 0
    if number < 1 or number > 10000:
        raise SliceError("%s must be a whole number from 1 to 10000, got %r" % (name, value))
    return number


def slice_options(raw: Optional[Dict[str, Any]], state_dir: Optional[str]) -> Optional[Dict[str, Any]]:
    """The validated slice settings of a run (None: an unsliced run).

    ``raw``: ``mode`` (``slice`` | ``merge``; empty = unsliced), ``group`` (gpuops_run_group), ``slice``
    (gpuops_slice: this slice's number or AWX job id; slice mode only), ``count`` (gpuops_slice_count: how many
    slices the run has), ``expect`` (gpuops_expect_slices: how many the merge needs), ``db_url`` (gpuops_db_url;
    else the embedded store under ``state_dir``, which only slices on the same controller share).
    """
    raw = raw or {}
    mode = raw.get("mode") or ""
    if mode in ("", "none"):
        return None
    if mode not in ("slice", "merge"):
        raise SliceError("gpuops_slice_mode must be slice, merge or empty (an unsliced run), got %r" % (mode,))
    if raw.get("group") in (None, ""):
        raise SliceError(
            "gpuops_slice_mode=%s needs gpuops_run_group: the id every slice and the merge of one run share "
            "(the AWX workflow sets it, docs/scale-out.md)" % mode
        )
    opts = {
        "mode": mode,
        "group": check_group(raw.get("group")),
        "slice": check_slice(raw.get("slice")) if mode == "slice" else None,
        "count": _count(raw.get("count"), "gpuops_slice_count"),
        "expect": _count(raw.get("expect"), "gpuops_expect_slices"),
        "db_url": raw.get("db_url") or None,
        "state_dir": state_dir or None,
    }
    if mode == "slice" and raw.get("slice") in (None, ""):
        raise SliceError("gpuops_slice_mode=slice needs gpuops_slice (this slice's number; under AWX its job id)")
    if not opts["db_url"] and not opts["state_dir"]:
        raise SliceError(
            "gpuops_slice_mode=%s needs a store shared by the slices and the merge: gpuops_db_url (PostgreSQL, "
            "slices on several execution nodes) or gpuops_state_dir (the embedded store of one controller)" % mode
        )
    return opts


def slice_summary(nodes: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """The slice's counts, shaped like report.json's summary (no cluster findings: the merge makes them)."""
    status: Dict[str, int] = {}
    severity: Dict[str, int] = {}
    for n in nodes.values():
        status[n["status"]] = status.get(n["status"], 0) + 1
        for f in n.get("findings") or []:
            severity[f.get("severity")] = severity.get(f.get("severity"), 0) + 1
    return {"nodes": len(nodes), "status": status, "severity": severity, "cluster_findings": []}
