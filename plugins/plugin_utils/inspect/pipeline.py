# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inspection pipeline on the controller: facts -> findings -> cluster view -> report.

Pure orchestration over _collect (offline facts), _policy/_checks/_cluster (the health policy), _state
(previous readings, clear markers, escalation) and _report (rendering). The action plugin
``gpuops.cluster.inspect_cluster`` is thin glue around :func:`inspect_nodes` (its evaluation and slice steps in
``steps.py``); the benchmark's "floor" calls it directly in a plain Python loop.
"""

from __future__ import annotations

import datetime
import json
import os
import time
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy
from ansible_collections.gpuops.cluster.plugins.plugin_utils import checks as _checks
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import (
    cluster as _cluster,
    fleet as _fleet,
    report as _report,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import (
    facts_cache as _facts_cache,
    livetree as _livetree,
    pool as _pool,
    report_files as _report_files,
    run_notes as _run_notes,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state as _state, state_store as _state_store
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import slurm_record_name
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks import backup as _checks_backup
from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform import checks as _platform_checks
from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform import jobs as _platform_jobs
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import SCHEMA as FACTS_SCHEMA
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import collect_all
from ansible_collections.gpuops.cluster.plugins.module_utils._common import error_record
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import iso_z, utcnow, utcnow_iso


def _unreachable_facts(message: str) -> Dict[str, Any]:
    return {
        "schema": FACTS_SCHEMA,
        "mode": "live",
        "unreachable": True,
        "unreachable_message": message,
        "errors": [],
    }


def _whole(facts: Any) -> Any:
    """A node's whole facts, decoded (from :class:`_facts_cache.NodeFacts` or as they are)."""
    if isinstance(facts, _facts_cache.NodeFacts):
        return _facts_cache.facts_of(facts.full)
    return _facts_cache.facts_of(facts)


def _failed_facts(h: Dict[str, Any], what: str, exc: BaseException) -> Dict[str, Any]:
    """The facts of a node whose evidence could not be read or judged (``what`` failed with ``exc``): no domain
    (all unknown: status ``error``, never a fault or healthy), one ``capture`` error that says why (issue 35).

    The per-node boundary of the inspection: one node's evidence (a capture nested 100,000 deep, a bug a file
    triggers) costs that node only; the others are judged and the reports written."""
    now = utcnow_iso()
    capture_dir = h.get("capture_dir")
    msg = "%s failed: %s: %s" % (what, type(exc).__name__, str(exc)[:300] or "(no message)")
    return {
        "schema": FACTS_SCHEMA,
        "collected_at": now,
        "mode": "capture" if capture_dir else "live",
        "capture_dir": capture_dir,
        "hostname": None,
        "errors": [error_record("capture", "internal", msg, source=capture_dir)],
    }


def _evidence_time(facts: Dict[str, Any]) -> tuple:
    """(evidence time, its source) of a node's facts (docs/capture.md); (None, None) for an unreachable node."""
    if not isinstance(facts, dict) or facts.get("unreachable"):
        return None, None
    when = facts.get("evidence_time") or facts.get("collected_at")
    source = facts.get("evidence_time_source") or ("collected_at" if when else None)
    return when, source


def resolve_profiles(
    hosts: Dict[str, Dict[str, Any]], profiles: Optional[Dict[str, Any]], policy: Dict[str, Any]
) -> Dict[str, Optional[Dict[str, Any]]]:
    """Each host's hardware profile (dict) or None (no node class: profile checks off).

    A node class that names no profile (``profiles`` or ``policy["profiles"]``) while profiles are defined raises
    ``_policy.PolicyError`` naming every such host, the class and the known classes, before anything is read: a
    typo must stop the run, not switch every profile check off. With no profile defined anywhere the class only
    keys other data (upgrade baselines): the host has no profile, as one without a class.
    """
    out: Dict[str, Optional[Dict[str, Any]]] = {}
    problems = []
    for host in sorted(hosts):
        h = hosts[host] or {}
        profile = h.get("profile")
        node_class = h.get("node_class")
        if profile is None and node_class not in (None, ""):
            profile = (profiles or {}).get(node_class)
            own = (h.get("policy_overrides") or {}).get("profiles") or {}  # host-level policy profiles
            for table in (own, policy.get("profiles") or {}):
                if profile is None and isinstance(table, dict):
                    profile = table.get(node_class)
            known = _policy.known_classes(policy, dict(profiles or {}, **own) if isinstance(own, dict) else profiles)
            if profile is None and known:  # no profile defined anywhere: the class keys other data only
                problems.append(_policy.unknown_class_message(host, node_class, known))
        out[host] = profile
    if problems:
        raise _policy.PolicyError("; ".join(problems))
    return out


def _collect_cached(host: str, capture_dir: str, options: Optional[Dict[str, Any]], cache: Any) -> Any:
    """A capture directory's facts as :class:`_facts_cache.RawFacts` (their JSON text): from the facts cache
    when its fingerprint is unchanged, else parsed (and cached). Without a cache (no state directory, check
    mode): parsed."""
    if cache is None:
        return _facts_cache.to_raw(collect_all(capture_dir=capture_dir, options=options))
    fingerprint = _facts_cache.capture_fingerprint(capture_dir)
    facts = cache.get(host, capture_dir, fingerprint)
    if facts is None:
        facts = _facts_cache.to_raw(collect_all(capture_dir=capture_dir, options=options))
        cache.put(host, capture_dir, fingerprint, facts)
    return facts


def _read_captured(host: str, ctx: Dict[str, Any]) -> Dict[str, Any]:
    """One captured host's facts (a worker's task: :func:`_pool.map_hosts`)."""
    return _collect_cached(host, ctx["hosts"][host]["capture_dir"], ctx["collect_options"], ctx["cache"])


#: a parse costs ~12-25 ms a node: worth both CPUs from this many nodes (the evaluation: _pool.POOL_MIN_HOSTS)
READ_POOL_MIN_HOSTS = 32


def _read_live(host: str, ctx: Dict[str, Any]) -> Any:
    """One live host's facts from the evidence its node sent back (collect_info ``parse_on: controller``): parsed
    here with the capture collectors (:mod:`_livetree`); never cached (live evidence is new every run)."""
    return _facts_cache.to_raw(_livetree.parse_packed(ctx["hosts"][host]["evidence"]))


def _read_one(host: str, ctx: Dict[str, Any]) -> Any:
    """One host's facts (a worker's task); whatever its evidence makes the reading raise is that host's error
    (:func:`_failed_facts`), never the run's."""
    try:
        if ctx["hosts"][host].get("capture_dir"):
            return _read_captured(host, ctx)
        return _read_live(host, ctx)
    except Exception as exc:  # noqa: BLE001 - the per-node boundary: one node's evidence never stops the run
        return _facts_cache.to_raw(_failed_facts(ctx["hosts"][host], "reading the node's evidence", exc))


def _read_hosts(
    hosts: Dict[str, Dict[str, Any]],
    base_policy: Dict[str, Any],
    base_hash: str,
    collect_options: Optional[Dict[str, Any]],
    cache: Any = None,
    n_workers: Optional[int] = None,
) -> Dict[str, tuple]:
    """host -> (its merged policy, the policy's hash, its facts): everything is read before anything is judged
    (the fleet baseline compares each node with its peers). Capture directories are parsed on every CPU and
    held as their JSON text (:class:`_facts_cache.RawFacts`), decoded where each node is judged."""
    merged_cache: Dict[str, Any] = {}
    read: Dict[str, tuple] = {}
    captured = [host for host in sorted(hosts) if not (hosts[host] or {}).get("unreachable")]
    # capture directories, and live nodes' evidence sent back unparsed (_read_live): both parsed on every CPU
    captured = [host for host in captured if (hosts[host] or {}).get("capture_dir") or "evidence" in hosts[host]]
    ctx = {"hosts": hosts, "collect_options": collect_options, "cache": cache}
    parsed = dict(zip(captured, _pool.map_hosts(_read_one, captured, ctx, n_workers, min_hosts=READ_POOL_MIN_HOSTS)))
    for host in sorted(hosts):
        h = hosts[host] or {}
        host_over = h.get("policy_overrides") or {}
        if host_over:
            key = json.dumps(host_over, sort_keys=True, default=str)
            if key not in merged_cache:
                p = _policy.merge_policy(base_policy, host_over)
                _policy.validate_policy(p)
                merged_cache[key] = (p, _policy.policy_hash(p))
            policy, phash = merged_cache[key]
        else:
            policy, phash = base_policy, base_hash
        if h.get("unreachable"):
            facts = _unreachable_facts(h.get("message") or "unreachable")
        elif h.get("capture_dir") or "evidence" in h:
            facts = parsed[host]
            h.pop("evidence", None)  # parsed: the parent holds the facts' text, not the evidence as well
        else:
            facts = h.get("facts") or _unreachable_facts("no facts were collected")
        read[host] = (policy, phash, facts)
    return read


def _evaluate_host(host: str, ctx: Dict[str, Any]) -> Dict[str, Any]:
    """One node's entry of the report (a worker's task): findings, status, domains; its state read and saved.

    ``facts`` is None in the entry when they are the facts read (the parent has them: not sent back twice).
    The per-node boundary (issue 35): when judging the node raises, it is judged again on :func:`_failed_facts`
    (status ``error``, a ``collector.error`` saying why) and its state is left as it was. A state that cannot be
    read (StateError: a stored document that is corrupt) still stops the run before anything is saved, as
    documented."""
    try:
        return _evaluate_entry(host, ctx, None)
    except _state.StateError:
        raise
    except Exception as exc:  # noqa: BLE001 - the per-node boundary: one node never stops the run
        return _evaluate_entry(host, ctx, _failed_facts(ctx["hosts"][host] or {}, "judging the node's facts", exc))


def _evaluate_entry(host: str, ctx: Dict[str, Any], failed: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """:func:`_evaluate_host`'s work; with ``failed`` (facts of a node that could not be judged) those facts are
    judged instead of the ones read, against the node's state, which is not changed."""
    h = ctx["hosts"][host] or {}
    state_dir, now, fleet = ctx["state_dir"], ctx["now"], None
    policy, phash, held = ctx["read"][host]
    if failed is not None:
        held, read_facts = None, failed
        h = {k: v for k, v in h.items() if k != "previous_capture_dir"}
    else:
        try:
            read_facts = _facts_cache.facts_of(held)
        except ValueError:
            held = None  # not what the report may take
            # a facts-cache entry whose checksum held but whose text is not JSON (written by hand into the private
            # cache): the capture is parsed again, and the report takes the new parse (the entry's "facts" below)
            if not h.get("capture_dir"):
                raise
            read_facts = collect_all(capture_dir=h["capture_dir"], options=ctx["collect_options"])
    profile = ctx["host_profiles"][host]
    if not profile:
        fleet = ctx["baselines"].get(_fleet.peer_class(read_facts, ctx["classes"].get(host)) or "")
    facts = _checks_backup.with_backup_status(read_facts, state_dir, host, policy, now)  # docs/backup.md
    # the state, loaded by the parent in one read from the store, is shared by the workers (copied before it is
    # changed: own_state False)
    own = False
    host_state = ctx["saved"].get(host, {})
    if h.get("baseline") is not None:
        host_state = dict(host_state, baseline=h["baseline"])
    if h.get("previous_capture_dir") and h.get("capture_dir"):
        # Offline comparison of two captures of the same node: the earlier one is the previous reading
        # (counter deltas, boot ids, active faults); its own findings are not reported.
        prev_facts = _facts_cache.facts_of(
            _collect_cached(host, h["previous_capture_dir"], ctx["collect_options"], ctx["cache"])
        )
        host_state = _checks.evaluate_node(prev_facts, profile, policy, host_state, now, host, fleet, own_state=own)[1]
        own = True  # the state the earlier capture left is this call's own
    findings, new_state = _checks.evaluate_node(facts, profile, policy, host_state, now, host, fleet, own_state=own)
    findings = findings + ctx["platform_nodes"].get(host, [])
    domains = _checks.domain_states(facts, profile, policy)
    status, reason = _cluster.node_assessment(findings, facts, policy, domains)
    return {
        "findings": findings,
        "status": status,
        "status_reason": reason,
        "domains": domains,
        # what the parent keeps of the facts after judging (_facts_cache.NodeFacts): the parts it still reads,
        # and the whole facts only when they are not the ones it holds already (backup status added)
        "facts": None if facts is read_facts and held is not None else _facts_cache.to_raw(facts),
        "_slim": _facts_cache.slim_facts(facts),
        "rack": h.get("rack"),
        "leaf": h.get("leaf"),
        "power": h.get("power"),
        "mode": facts.get("mode"),
        "policy_hash": phash,
        "baseline": "profile" if profile else ("fleet" if fleet else "none"),
        # saved by the parent in one batch (one transaction in the store); a node that could not be judged keeps
        # its state as it was: nothing saved
        "_new_state": None if failed is not None else new_state,
        "_kept": failed is not None,
    }


def _judge(
    order: List[str],
    ctx: Dict[str, Any],
    states: Any,
    evaluate_only: bool,
    timing: Dict[str, Any],
    n_workers: Optional[int],
) -> Dict[str, Dict[str, Any]]:
    """Every host judged on every CPU (_evaluate_host), its facts kept as the report holds them, and the batch of
    new states saved (one transaction in the store)."""
    read, saved = ctx["read"], ctx["saved"]
    nodes: Dict[str, Dict[str, Any]] = dict(zip(order, _pool.map_hosts(_evaluate_host, order, ctx, n_workers)))
    new_states: Dict[str, Any] = {}
    for host, node in nodes.items():
        new_state = node.pop("_new_state")
        if not node.pop("_kept", False):  # a node not judged on its own evidence keeps its state (_evaluate_host)
            new_states[host] = new_state
        full = read[host][2] if node["facts"] is None else node["facts"]
        slim = node.pop("_slim")
        if evaluate_only:  # a slice stores its nodes for the merge: the whole facts, decoded
            node["facts"] = _facts_cache.facts_of(full)
        else:
            node["facts"] = _facts_cache.NodeFacts(slim, full) if isinstance(slim, dict) else full
    if states:
        # one transaction: all hosts or none; unchanged hosts are not rewritten
        timing["state_written"] = states.save_hosts(new_states, previous=saved)
        states.close()
    return nodes


def inspect_nodes(  # noqa: PLR0913 - the inspection's inputs, each documented below
    hosts: Dict[str, Dict[str, Any]],
    profiles: Optional[Dict[str, Any]] = None,
    policy_overrides: Optional[Dict[str, Any]] = None,
    state_dir: Optional[str] = None,
    now: Optional[datetime.datetime] = None,
    include_facts: bool = True,
    collect_options: Optional[Dict[str, Any]] = None,
    *,
    platform: Optional[Dict[str, Any]] = None,
    db_url: Optional[str] = None,
    workers: Optional[int] = None,
    timing: Optional[Dict[str, Any]] = None,
    progress: Any = None,
    evaluate_only: bool = False,
) -> Dict[str, Any]:
    """Inspect every host and return report.json's dict.

    ``platform``: the cluster platform facts (``gpuops.cluster.platform_info``, issue 19) or None; their findings
    join the cluster findings, a node finding of a platform check (a node that fails its jobs) joins that node's.
    ``db_url``: gpuops_db_url, the shared state in the store (docs/state.md "Backends"; else
    the embedded SQLite file ``<state_dir>/gpuops.db``).
    ``workers``: worker processes for reading and evaluating (default: the CPUs, ``_pool``);
    ``timing``: a dict that receives the seconds of each phase (read_s, evaluate_s, cluster_s; state_written);
    ``progress``: where each stage's progress lines go (``_run_notes.progress_sink``: stderr from 500 nodes by
    default, a callable, or False).
    ``evaluate_only``: a slice's half (:func:`evaluate_nodes`): the nodes evaluated, no platform checks' cluster
    view, no cluster view, no report.
    Captured nodes are parsed and evaluated on every CPU, in host order: the report is the serial run's. With a
    ``state_dir`` a capture whose fingerprint is unchanged reuses its parsed facts (``_facts_cache``).

    ``hosts`` maps inventory hostname -> {
        ``facts``: the aggregate facts of a live collection (or None),
        ``capture_dir``: analyse this capture directory on the controller instead,
        ``unreachable``: bool, ``message``: why,
        ``rack``, ``leaf``, ``power``, ``node_class`` (key into ``profiles``) or ``profile`` (the dict itself),
        ``policy_overrides``: host-level overrides (merged over ``policy_overrides``),
        ``baseline``: golden baseline facts for drift checks (optional),
        ``previous_capture_dir``: an earlier capture of the same node, read first as the previous reading}.
    Raises ``_policy.PolicyError`` for an invalid policy (unknown key, bad value) or a node class that names no
    profile (the class and the known classes in the message): a typo must fail the run. Each node in the
    report carries ``status_reason``, ``domains`` (what could be read: ``_checks.domain_states``) and
    ``baseline`` (what it was judged against: ``profile``, ``fleet`` = the majority of its class, or ``none``);
    the report's ``fleet_baseline`` says what was inferred per class (``_fleet.profiles_yaml`` turns it into a
    ``gpuops_profiles`` block).
    """
    timing = {} if timing is None else timing
    sink = _run_notes.progress_sink(progress, len(hosts))
    t0 = time.monotonic()
    states = _state_store.open_state(state_dir, db_url)
    now = now or utcnow()
    generated_at = iso_z(now)
    profiles = profiles or {}
    base_policy = _policy.merge_policy(_policy.DEFAULT_POLICY, policy_overrides or {})
    _policy.validate_policy(base_policy)
    base_hash = _policy.policy_hash(base_policy)
    host_profiles = resolve_profiles(hosts, profiles, base_policy)
    cache = _facts_cache.FactsCache(state_dir, collect_options) if state_dir else None
    with _run_notes.Stage(sink, "read", len(hosts)):
        read = _read_hosts(hosts, base_policy, base_hash, collect_options, cache, workers)
    # nodes without a profile are compared with the majority of their class (zero-config fleet baseline)
    unprofiled = [host for host in sorted(hosts) if not host_profiles[host]]
    classes = {host: (hosts[host] or {}).get("node_class") for host in unprofiled}
    baselines = _fleet.infer_baselines(
        {host: _facts_cache.facts_of(read[host][2]) for host in unprofiled}, classes, base_policy
    )
    platform_cluster, platform_nodes = _platform_findings(platform, base_policy, now, hosts)
    saved = states.load_hosts(sorted(hosts)) if states else {}
    timing["read_s"] = time.monotonic() - t0
    ctx = {
        "hosts": hosts,
        "read": read,
        "host_profiles": host_profiles,
        "baselines": baselines,
        "classes": classes,
        "platform_nodes": platform_nodes,
        "state_dir": state_dir,
        "saved": saved,
        "now": now,
        "collect_options": collect_options,
        "cache": cache,
    }
    order = sorted(hosts)
    with _run_notes.Stage(sink, "evaluate", len(order)):
        nodes = _judge(order, ctx, states, evaluate_only, timing, workers)
    timing["evaluate_s"] = time.monotonic() - t0 - timing["read_s"]
    if evaluate_only:
        return {"nodes": nodes, "policy_hash": base_hash, "generated_at": generated_at}
    with _run_notes.Stage(sink, "cluster view and report", len(nodes)):
        return finish_report(
            nodes,
            hosts,
            base_policy,
            now,
            include_facts=include_facts,
            platform=platform,
            platform_cluster=platform_cluster,
            baselines=baselines,
            timing=timing,
        )


def evaluate_nodes(  # noqa: PLR0913 - inspect_nodes' inputs but the platform
    hosts: Dict[str, Dict[str, Any]],
    *,
    profiles: Optional[Dict[str, Any]] = None,
    policy_overrides: Optional[Dict[str, Any]] = None,
    state_dir: Optional[str] = None,
    db_url: Optional[str] = None,
    now: Optional[datetime.datetime] = None,
    include_facts: bool = True,
    collect_options: Optional[Dict[str, Any]] = None,
    workers: Optional[int] = None,
    timing: Optional[Dict[str, Any]] = None,
    progress: Any = None,
) -> Dict[str, Any]:
    """A slice's half of :func:`inspect_nodes` (docs/scale-out.md): every node evaluated exactly as an unsliced run
    does, without the platform checks, the cluster view or the report: ``{nodes: {host: entry}, policy_hash,
    generated_at}``. The merge step (``_slices.merge_report``) finishes them with :func:`finish_report`."""
    return inspect_nodes(
        hosts,
        profiles=profiles,
        policy_overrides=policy_overrides,
        state_dir=state_dir,
        now=now,
        include_facts=include_facts,
        collect_options=collect_options,
        db_url=db_url,
        workers=workers,
        timing=timing,
        progress=progress,
        evaluate_only=True,
    )


def finish_report(  # noqa: PLR0913 - the evaluated nodes and what the cluster view reads, documented below
    nodes: Dict[str, Dict[str, Any]],
    hosts: Dict[str, Dict[str, Any]],
    base_policy: Dict[str, Any],
    now: datetime.datetime,
    include_facts: bool = True,
    *,
    platform: Optional[Dict[str, Any]] = None,
    platform_cluster: Optional[List[Dict[str, Any]]] = None,
    baselines: Optional[Dict[str, Any]] = None,
    timing: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """The cluster half of an inspection: cluster findings over the evaluated ``nodes`` (their findings are
    rewritten in place by the correlation), the report, the fleet-baseline summary and the platform summary.

    ``platform`` / ``platform_cluster``: the platform facts and their cluster findings (the node findings of the
    platform checks are already in ``nodes``); ``baselines``: the fleet baselines the nodes were judged against
    (None: inferred here from the nodes' facts, as the merge of a sliced run does); ``timing``: receives
    ``cluster_s``.
    """
    base_hash = _policy.policy_hash(base_policy)
    unprofiled = [host for host in sorted(nodes) if nodes[host].get("baseline") != "profile"]
    classes = {host: (hosts.get(host) or {}).get("node_class") for host in unprofiled}
    if baselines is None:
        baselines = _fleet.infer_baselines(
            {host: _whole(nodes[host]["facts"]) for host in unprofiled}, classes, base_policy
        )
    t_cluster = time.monotonic()
    # statuses first: the cluster view must know which nodes are unknown (status error); the job view (job_storm)
    names = slurm_names(hosts)
    cluster_findings = _cluster.evaluate_cluster(nodes, base_policy, now, platform, names)
    cluster_findings += platform_cluster or []
    if timing is not None:
        timing["cluster_s"] = time.monotonic() - t_cluster
    report = _report.build_report(
        iso_z(now),
        nodes,
        cluster_findings,
        policy_version=str(base_policy.get("version")),
        policy_hash=base_hash,
        include_facts=include_facts,
    )
    for host, n in report["nodes"].items():
        n["status_reason"] = nodes[host]["status_reason"]
        n["domains"] = nodes[host]["domains"]
        n["baseline"] = nodes[host]["baseline"]
        n["evidence_time"], n["evidence_time_source"] = _evidence_time(nodes[host]["facts"])
        name = slurm_record_name(nodes[host]["facts"], host)
        if name:
            n["slurm_node_name"] = name  # a capture's single scontrol record under another NodeName
    _run_notes.mark_evidence_age(report, now, base_policy)  # stale evidence; respond_by from the evidence time
    members: Dict[str, List[str]] = {}
    for host in unprofiled:
        members.setdefault(_fleet.peer_class(_whole(nodes[host]["facts"]), classes.get(host)) or "", []).append(host)
    report["fleet_baseline"] = _fleet.summary(baselines, members)
    if platform is not None:
        report["platform"] = _platform_jobs.platform_summary(platform, now.timestamp())
    return report


def slurm_names(hosts: Dict[str, Any]) -> Dict[str, str]:
    """host -> its Slurm NodeName where the inventory names it otherwise (``gpuops_slurm_node_name``, carried as
    ``slurm_node_name`` by ``steps.host_entry``): the job view and the platform checks name nodes as Slurm does."""
    return {h: str(e["slurm_node_name"]) for h, e in hosts.items() if isinstance(e, dict) and e.get("slurm_node_name")}


def _platform_findings(
    platform: Optional[Dict[str, Any]],
    policy: Dict[str, Any],
    now: datetime.datetime,
    hosts: Dict[str, Any],
    names: Optional[Dict[str, str]] = None,
) -> Any:
    """(cluster findings, {host: node findings}) of the platform checks. The checks name a node by its Slurm
    NodeName: a node finding goes to the inspected host of that Slurm name (``gpuops_slurm_node_name``, else the
    inventory name), with that host and its id (``<host>:<check>:<component>:<code>``); a node finding of a node
    that is not inspected stays a cluster finding (component ``node:<Slurm name>``). ``names``: host -> Slurm
    NodeName (:func:`slurm_names`; default: read from ``hosts``' entries)."""
    if platform is None:
        return [], {}
    names = slurm_names(hosts) if names is None else names
    by_slurm = {h: h for h in hosts if h not in names}
    by_slurm.update((name, h) for h, name in sorted(names.items()) if h in hosts)  # a Slurm name set outright wins
    cluster: List[Dict[str, Any]] = []
    per_node: Dict[str, List[Dict[str, Any]]] = {}
    for f in _platform_checks.check_platform(platform, policy, now):
        host = f.get("host")
        inspected = by_slurm.get(host) if host else None
        if inspected:
            if inspected != host:
                f = dict(f, host=inspected, id="%s:%s:%s:%s" % (inspected, f["check"], f["component"], f["code"]))
            per_node.setdefault(inspected, []).append(f)
            continue
        if host:
            f = dict(f, host=None, component="node:%s" % host)
            f["id"] = "cluster:%s:%s:%s" % (f["check"], f["component"], f["code"])
        cluster.append(f)
    return cluster, per_node


# the report files (report.json, its facts side file, report.md/.html, gpuops.prom) live in report_files: these
# names stay importable from here for the action plugin, the benchmarks and the tests
REPORT_MODES = _report_files.REPORT_MODES
TEXTFILE_NAME = _report_files.TEXTFILE_NAME
write_textfile = _report_files.write_textfile
write_reports = _report_files.write_reports
write_json_stream = _report_files.write_json_stream
load_report = _report_files.load_report


def host_summary(report: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Per-host results the playbook hands back to each host as facts (no raw facts: they are in report.json)."""
    return {
        host: {
            "status": n["status"],
            "status_reason": n.get("status_reason"),
            "severity": n["severity"],
            "findings": n["findings"],
        }
        for host, n in report["nodes"].items()
    }


def default_report_dir(base: str = "reports") -> str:
    return os.path.join(base, utcnow_iso().replace(":", "").replace("-", ""))


def actions_by_host(report: Dict[str, Any], action: str = "isolate") -> Dict[str, List[Dict[str, Any]]]:
    """Hosts whose own findings carry ``action`` (correlated members were rewritten to monitor already).

    Nodes in status ``error`` (evidence missing or unreadable) are never targets of a disruptive action.
    """
    out: Dict[str, List[Dict[str, Any]]] = {}
    for host, n in report["nodes"].items():
        if action in _policy.DISRUPTIVE_ACTIONS and n.get("status") == "error":
            continue
        hits = [f for f in n["findings"] if f.get("action") == action]
        if hits:
            out[host] = hits
    return out
