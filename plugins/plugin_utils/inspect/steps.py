# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The steps of ``gpuops.cluster.inspect_cluster`` (issue 36): plan, slice, merge and evaluate.

The action plugin (a ``ControllerAction``) validates the arguments and picks the step; each step here takes what it
needs as keyword arguments and refuses with :class:`StepError` (the task's msg, no traceback):

- :func:`plan_step` (``validate_only``): live and captured targets, the platform hosts, the plan's handoff;
- :func:`slice_step` (``slice.mode: slice``): this slice's nodes evaluated and written to the store;
- :func:`merge_step` (``slice.mode: merge``): the run group's nodes from the store, the report of an unsliced run;
- :func:`evaluate_step`: every target inspected (``_inspect.inspect_nodes``);
- :func:`publish_step`: the report files, the service ledger and the inferred profiles of a merge or evaluation.

The pipeline's input per target comes from :func:`entries` (its variables, or the plan's handoff, and its live
collection); :func:`profiles` resolves every target's hardware profile first, so a typo in a node class stops the
run before anything is read.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible.module_utils.common.text.converters import to_text

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils._files import write_private_atomic
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import SCHEMA as FACTS_SCHEMA
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy, _runbooks
from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import StepError, host_var, plain
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import SEVERITIES
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import (
    fleet as _fleet,
    gate as _gate,
    pipeline as _inspect,
    plan_handoff as _plan_handoff,
    pool as _pool,
    report as _report,
    slices as _slices,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform import plan as _platform_plan
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import StoreError, open_store
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_run as _ledger_run
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store.state import StateError

# --- the targets and their variables -------------------------------------------------------------------------------


def capture_path(hv: Any, key: str) -> Optional[str]:
    """A capture directory from host vars; relative paths are relative to the inventory directory."""
    value = hv.get(key)
    if not value:
        return None
    path = os.path.expanduser(to_text(value))
    if not os.path.isabs(path) and hv.get("inventory_dir"):
        path = os.path.join(to_text(hv.get("inventory_dir")), path)
    return path


def check_args(
    *,
    targets: List[str],
    target_pattern: str,
    fail_on: str,
    fail_on_unknown: str,
    textfile_dir: Optional[str],
    inventory_sources: Any,
) -> None:
    """Stop with a clear message on an empty target set, a bad fail_on or a missing textfile directory."""
    if not targets:
        sources = ", ".join(to_text(s) for s in inventory_sources or []) or "?"
        raise StepError(
            "the host pattern %r (gpuops_targets, default gpu_nodes) matched no host in the inventory (%s): nothing "
            "was inspected. Define the group gpu_nodes or pass -e gpuops_targets=<group or pattern>"
            % (target_pattern, sources)
        )
    fail_on = fail_on or ""
    if fail_on and fail_on not in SEVERITIES:
        raise StepError(
            "gpuops_fail_on must be one of %s (the run fails when a finding at or above it exists) or empty (off), "
            "got %r" % (", ".join(SEVERITIES), fail_on)
        )
    try:
        _gate.parse_threshold(fail_on_unknown)
    except ValueError as exc:
        raise StepError(str(exc)) from exc
    if textfile_dir and not os.path.isdir(textfile_dir):
        raise StepError(
            "gpuops_textfile_dir %r is not a directory: create node_exporter's textfile collector directory first "
            "(docs/metrics.md)" % textfile_dir
        )


def classes(hostvars: Any, targets: List[str], policy_overrides: Any) -> Tuple[Dict[str, Any], List[str]]:
    """Each target's profile; fails naming every host whose node class names no profile (a typo).

    Returns ``(profiles, without_class)``: host -> profile dict or None, and the hosts without a profile: no
    class at all, or a class while no profile is defined anywhere (the class then only keys other data such
    as upgrade baselines). Allowed: their profile checks are off, the caller warns.
    """
    try:
        base = _policy.merge_policy(_policy.DEFAULT_POLICY, plain(policy_overrides or {}))
    except _policy.PolicyError as exc:
        raise StepError("invalid gpuops policy: %s" % exc) from exc
    profiles, problems, without = {}, [], []
    for host in targets:
        if host not in hostvars:
            raise StepError("target %r is not in the inventory" % host)
        hv = hostvars[host]
        node_class = hv.get("gpuops_node_class")
        node_class = to_text(node_class) if node_class not in (None, "") else None
        profile = hv.get("gpuops_profile")
        if profile is None and node_class is not None:
            overrides = host_var(hostvars, host, "gpuops_policy_overrides", {})
            tables = [
                host_var(hostvars, host, "gpuops_profiles", {}),
                (overrides.get("profiles") or {}) if isinstance(overrides, dict) else {},
                base.get("profiles") or {},
            ]
            for table in tables:
                if profile is None and isinstance(table, dict):
                    profile = table.get(node_class)
            known = sorted({to_text(k) for t in tables if isinstance(t, dict) for k in t})
            if profile is None and known:
                problems.append(_policy.unknown_class_message(host, node_class, known))
                continue
        if profile is None:
            without.append(host)  # no class, or a class while no profile is defined anywhere
        profiles[host] = plain(profile) if profile is not None else None
    if problems:
        raise StepError(
            "%d target(s) with an unknown node class, nothing was inspected: %s" % (len(problems), "; ".join(problems))
        )
    return profiles, without


def profiles(
    hostvars: Any,
    *,
    targets: List[str],
    policy_overrides: Any,
    state_dir: Optional[str],
    plan_token: str,
    reuse_plan: bool,
) -> Tuple[Dict[str, Any], List[str], Optional[Dict[str, Any]]]:
    """``(profiles, without_class, planned)``: each target's profile and the targets without one (:func:`classes`),
    from the plan's handoff when ``reuse_plan`` (an unsliced evaluation) and the plan task of this run wrote one
    (``planned``: its captured targets' entries; else None)."""
    planned = None
    if plan_token and state_dir and reuse_plan:
        # the plan task of this run read the targets' variables already (_plan_handoff): read once a run
        planned = _plan_handoff.read(state_dir, plan_token, targets)
    if planned is not None:
        return planned["profiles"], planned["without_class"], planned
    # before anything is read: a node class that names no profile stops the run by name
    return classes(hostvars, targets, policy_overrides) + (None,)


def without_class_warning(without_class: List[str]) -> str:
    """The warning that names the targets without a hardware profile (compared with their peers instead)."""
    return (
        "%d target(s) have no hardware profile (no gpuops_node_class, or no gpuops_profiles defined): they are "
        "compared with their peers instead (the ports and GPUs within each node, and the majority of their "
        "class where it has enough nodes: zero-config baseline, docs/policy.md; -e gpuops_write_profiles=FILE "
        "writes it as profiles to review): %s%s"
        % (len(without_class), ", ".join(without_class[:10]), " ..." if len(without_class) > 10 else "")
    )


def split_targets(hostvars: Any, targets: List[str]) -> Tuple[List[str], List[str]]:
    """(live, captured): targets contacted over their connection, and those analysed from a capture directory."""
    live, captured = [], []
    for host in targets:
        (captured if hostvars[host].get("gpuops_capture_dir") else live).append(host)
    return live, captured


def live(reg: Optional[Dict[str, Any]]) -> Tuple[Dict[str, Any], str]:
    """What a live host's registered collection gives the pipeline, and its outcome (ok/unreachable/failed)."""
    if reg is None:
        return {
            "unreachable": True,
            "message": "no collection result (host skipped or failed before collecting)",
        }, ("unreachable")
    if reg.get("unreachable"):
        return {"unreachable": True, "message": to_text(reg.get("msg") or "unreachable")}, "unreachable"
    if reg.get("facts") is None and reg.get("capture_packed") is not None and not reg.get("failed"):
        # collect_info parse_on=controller, result_format=capture: parsed by _inspect's workers (_livetree)
        return {"evidence": to_text(reg["capture_packed"])}, "ok"
    if reg.get("facts") is None and reg.get("facts_json") is not None:  # collect_info result_format=json
        try:
            reg = dict(reg, facts=_safejson.loads(to_text(reg["facts_json"]), what="facts_json"))
        except ValueError as exc:
            reg = dict(reg, failed=True, facts=None, msg="collect_info returned unreadable facts_json: %s" % exc)
    if reg.get("failed") and not reg.get("facts"):
        error = {
            "domain": "collect",
            "kind": "tool_error",
            "source": "gpuops.cluster.collect_info",
            "parser": None,
            "line": None,
            "message": to_text(reg.get("msg") or "module failed"),
        }
        return {"facts": {"schema": FACTS_SCHEMA, "mode": "live", "errors": [error]}}, "failed"
    return {"facts": reg.get("facts")}, "ok"


def host_entry(hostvars: Any, host: str) -> Dict[str, Any]:
    """A target's pipeline input from its variables (its profile and live collection are added by :func:`entries`)."""
    hv = hostvars[host]
    return {
        "capture_dir": capture_path(hv, "gpuops_capture_dir"),
        "previous_capture_dir": capture_path(hv, "gpuops_previous_capture_dir"),
        "rack": hv.get("gpuops_rack"),
        "leaf": hv.get("gpuops_leaf_switch"),
        "power": hv.get("gpuops_power_domain"),
        # the Slurm NodeName where the inventory name differs (the job view names nodes by it: job_storm)
        "slurm_node_name": hv.get("gpuops_slurm_node_name"),
        "node_class": hv.get("gpuops_node_class"),
        "policy_overrides": host_var(hostvars, host, "gpuops_policy_overrides", {}),
        "baseline": host_var(hostvars, host, "gpuops_golden_baseline"),
        # the windows in force, for the ledger's planned downtime (read here, once, with the other variables)
        "maintenance_windows": host_var(hostvars, host, "gpuops_maintenance_windows"),
    }


def entries(
    hostvars: Any,
    *,
    targets: List[str],
    profiles: Dict[str, Any],
    collect_var: str,
    planned: Optional[Dict[str, Any]] = None,
) -> Tuple[Dict[str, Dict[str, Any]], Dict[str, int]]:
    """The pipeline's input per host, and the live collection's counts {live, ok, unreachable, failed}.
    ``planned``: captured targets' entries as the plan read them (_plan_handoff): their variables are not read
    again."""
    hosts = {}
    collected = {"live": 0, "ok": 0, "unreachable": 0, "failed": 0}
    planned = planned or {}
    for host in targets:
        entry = planned.get(host)
        entry = dict(entry) if entry is not None else host_entry(hostvars, host)
        entry["profile"] = profiles[host]
        if not entry["capture_dir"]:
            reg = hostvars[host].get(collect_var)
            update, outcome = live(plain(reg) if reg is not None else None)
            entry.update(update)
            collected["live"] += 1
            collected[outcome] += 1
        hosts[host] = entry
    return hosts, collected


# --- the plan ------------------------------------------------------------------------------------------------------


def plan_step(  # noqa: PLR0913 - the plan's inputs, each a keyword
    hostvars: Any,
    *,
    targets: List[str],
    profiles: Dict[str, Any],
    without_class: List[str],
    state_dir: Optional[str],
    sliced: Optional[Dict[str, Any]],
    check_mode: bool,
) -> Dict[str, Any]:
    """The plan: live and captured targets, the platform hosts, and (with a state directory, unsliced, not in
    check mode) the handoff of the captured targets' entries to the evaluation (_plan_handoff)."""
    live_hosts, captured = split_targets(hostvars, targets)
    if sliced and sliced["mode"] == "merge":
        live_hosts, captured = [], []  # the merge reads the slices' nodes from the store, never the nodes
    platform = _platform_plan.platform_hosts(hostvars, targets, capture_path)
    token = None
    if state_dir and not sliced and not check_mode:
        planned = {host: host_entry(hostvars, host) for host in captured}
        token = _plan_handoff.write(state_dir, targets, profiles, without_class, planned, platform)
    return {
        "changed": False,
        "without_class": without_class,
        "targets": list(targets),
        "live": live_hosts,
        "captured": captured,
        "platform_hosts": platform,
        "plan_token": token or "",
        "msg": "%d targets checked" % len(profiles),
    }


# --- a sliced run: the slices and their merge (docs/scale-out.md) -------------------------------------------------


def slice_options(*, options: Any, db_url: Optional[str], state_dir: Optional[str]) -> Optional[Dict[str, Any]]:
    """``_slices.slice_options`` of the task's ``slice`` (None: not sliced); gpuops_db_url is the slices' store too."""
    try:
        raw = dict(plain(options) or {})
        raw["db_url"] = raw.get("db_url") or db_url  # gpuops_db_url: the state's store is the slices' too
        return _slices.slice_options(raw, state_dir)
    except _slices.SliceError as exc:
        raise StepError(str(exc)) from exc


def _store(sliced: Dict[str, Any]) -> Any:
    try:
        return open_store(state_dir=sliced["state_dir"], db_url=sliced["db_url"])
    except StoreError as exc:
        raise StepError(str(exc)) from exc


def slice_step(  # noqa: PLR0913 - the slice's inputs, each a keyword
    hosts: Dict[str, Dict[str, Any]],
    *,
    sliced: Dict[str, Any],
    policy_overrides: Any,
    state_dir: Optional[str],
    db_url: Optional[str],
    check_mode: bool,
) -> Dict[str, Any]:
    """A slice: evaluate this slice's nodes as an unsliced run does and write them to the store in one
    transaction; no cluster view, no reports, no gate (the merge step makes them). ``state_dir``/``db_url``: the
    state (None in check mode, which writes nothing)."""
    try:
        evaluated = _inspect.evaluate_nodes(
            hosts, policy_overrides=policy_overrides, state_dir=state_dir, db_url=db_url, include_facts=True
        )
    except _policy.PolicyError as exc:
        raise StepError("invalid gpuops policy: %s" % exc) from exc
    except StateError as exc:  # a corrupt state file, an unreachable gpuops_db_url
        raise StepError("state: %s" % exc) from exc
    nodes = evaluated["nodes"]
    written = {"group": sliced["group"], "slice": sliced["slice"], "hosts": len(nodes), "written": False}
    if not check_mode:  # check mode writes nothing
        store = _store(sliced)
        try:
            meta = {"slice_count": sliced["count"], "policy_hash": evaluated["policy_hash"]}
            written = dict(_slices.write_slice(store, sliced["group"], sliced["slice"], nodes, meta), written=True)
        except (StoreError, _slices.SliceError) as exc:
            raise StepError("slice not written: %s" % exc) from exc
        finally:
            store.close()
    return {
        "changed": False,
        "slices": written,
        "summary": _slices.slice_summary(nodes),
        "generated_at": evaluated["generated_at"],
        "nodes": {},  # per-node verdicts are final only after the merge's correlation: nothing acts on a slice
        "reports": {},
        "fail_on": None,
    }


def _pipeline_errors(call: Callable[[], Any]) -> Any:
    """``call()`` with the pipeline's expected failures turned into a clear refusal."""
    try:
        return call()
    except _policy.PolicyError as exc:
        raise StepError("invalid gpuops policy: %s" % exc) from exc
    except (_runbooks.CatalogError, _pool.PoolError) as exc:  # CatalogError: a broken install
        raise StepError(str(exc)) from exc
    except StateError as exc:  # a corrupt state file, an unreachable gpuops_db_url
        raise StepError("state: %s" % exc) from exc


def merge_step(  # noqa: PLR0913 - the merge's inputs, each a keyword
    hosts: Dict[str, Dict[str, Any]],
    *,
    sliced: Dict[str, Any],
    policy_overrides: Any,
    platform: Optional[Dict[str, Any]],
    include_facts: bool,
    check_mode: bool,
) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """The merge step: every node of the run group, then the cluster view and the report of an unsliced run:
    ``(report, slices)``, ``slices`` saying what was merged (and the run groups pruned, not in check mode)."""

    def merge():
        store = _store(sliced)
        try:
            nodes, info = _slices.load_group(store, sliced["group"], sliced["expect"] or sliced["count"], hosts)
            report = _slices.merge_report(
                nodes, hosts, policy_overrides=policy_overrides, platform=platform, include_facts=include_facts
            )
            if not check_mode:
                info["pruned_groups"] = _slices.prune(store)
        except (StoreError, _slices.SliceError) as exc:
            raise StepError(str(exc)) from exc
        finally:
            store.close()
        return report, info

    return _pipeline_errors(merge)


# --- an unsliced run ----------------------------------------------------------------------------------------------


def evaluate_step(  # noqa: PLR0913 - inspect_nodes' inputs, each a keyword
    hosts: Dict[str, Dict[str, Any]],
    *,
    policy_overrides: Any,
    state_dir: Optional[str],
    db_url: Optional[str],
    include_facts: bool,
    platform: Optional[Dict[str, Any]],
    timing: Dict[str, Any],
    progress: Any,
) -> Dict[str, Any]:
    """Every target inspected (``_inspect.inspect_nodes``): report.json's dict. ``state_dir``/``db_url``: the state
    (None in check mode: no counter advanced, no marker cleared, no escalation history); ``timing`` receives each
    phase's seconds; ``progress``: the progress lines' sink."""
    return _pipeline_errors(
        lambda: _inspect.inspect_nodes(
            hosts,
            timing=timing,
            progress=progress,
            policy_overrides=policy_overrides,
            state_dir=state_dir,
            db_url=db_url,
            include_facts=include_facts,
            platform=platform,
        )
    )


# --- what a merge or an evaluation leaves behind ------------------------------------------------------------------


def ledger_prepare(  # noqa: PLR0913 - the ledger's inputs, each a keyword
    report: Dict[str, Any],
    hosts: Dict[str, Dict[str, Any]],
    *,
    enabled: bool,
    policy_overrides: Any,
    state_dir: Optional[str],
    db_url: Optional[str],
    check_mode: bool,
) -> Optional[Tuple[Any, Dict[str, Any]]]:
    """The service ledger (docs/service.md): SLA findings into the report now, the run recorded after the
    reports (:func:`publish_step`). None when the ledger is off, there is no store, or in check mode."""
    if not (enabled and (state_dir or db_url)) or check_mode:
        return None
    sla = _policy.merge_policy(_policy.DEFAULT_POLICY, plain(policy_overrides or {}))["sla"]
    ledger = (_ledger_run.prepare(report, state_dir, db_url, sla), sla)
    # the maintenance windows in force, for planned downtime (docs/service.md)
    ledger[0]["windows_by_host"] = {h: (e or {}).get("maintenance_windows") for h, e in hosts.items()}
    return ledger


def write_profiles(path: str, report: Dict[str, Any]) -> Dict[str, Any]:
    """The inferred fleet baseline as a gpuops_profiles block (0600): {path, classes}."""
    baselines = report.get("fleet_baseline") or {}
    text = _fleet.profiles_yaml(baselines, report["generated_at"])
    try:
        write_private_atomic(path, text, 0o600)
    except OSError as exc:
        raise StepError("cannot write the inferred profiles to %s: %s" % (path, exc)) from exc
    return {"path": path, "classes": sorted(baselines)}


def publish_step(  # noqa: PLR0913 - where each output goes, each a keyword
    report: Dict[str, Any],
    *,
    ledger: Optional[Tuple[Any, Dict[str, Any]]],
    report_dir: Optional[str],
    templates_dir: Optional[str],
    textfile_dir: Optional[str],
    profiles_path: Optional[str],
    progress: Any,
) -> Dict[str, Any]:
    """The report files (``report_dir``; None: none written), node_exporter's textfile (``textfile_dir``), the run
    in the service ledger (``ledger``: :func:`ledger_prepare`) and the inferred profiles (``profiles_path``):
    ``{reports[, report_dir][, ledger][, profiles_written]}``."""
    out: Dict[str, Any] = {"reports": {}}
    if report_dir is not None:
        try:
            out["reports"] = _inspect.write_reports(
                report, report_dir, progress=progress, templates_dir=templates_dir, textfile_dir=textfile_dir
            )
        except _report.ReportTemplateError as exc:
            raise StepError(str(exc)) from exc
        out["report_dir"] = os.path.abspath(report_dir)
    if ledger is not None:
        try:
            out["ledger"] = _ledger_run.record(ledger[0], report, ledger[1])
        except StoreError as exc:
            raise StepError(
                "the run was not recorded in the service ledger (%s); the reports were written (%s)"
                % (exc, out.get("report_dir") or "no report directory")
            ) from exc
    if profiles_path:
        out["profiles_written"] = write_profiles(profiles_path, report)
    return out


def verdicts(report: Dict[str, Any], *, fail_on: str, fail_on_unknown: str) -> Dict[str, Any]:
    """What the task returns of a report: summary, policy, per-host verdicts and the ``gpuops_fail_on`` gate."""
    return {
        "changed": False,
        "summary": report["summary"],
        "policy": report["policy"],
        "generated_at": report["generated_at"],
        "nodes": _inspect.host_summary(report),
        "fail_on": gate(report["summary"], fail_on=fail_on, fail_on_unknown=fail_on_unknown),
    }


def gate(summary: Dict[str, Any], *, fail_on: str, fail_on_unknown: str) -> Optional[Dict[str, Any]]:
    """Findings (node and cluster) at or above ``fail_on`` and the nodes that could not be judged
    (``_gate.fail_on_gate``); None when off."""
    return _gate.fail_on_gate(summary, fail_on, fail_on_unknown)


def elapsed(since: float) -> float:
    """Seconds since ``since`` (``time.monotonic()``), rounded as the task's ``timing`` shows them."""
    return round(time.monotonic() - since, 3)
