# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node-side health check: Slurm's ``HealthCheckProgram`` built from the inspection's own code.

One run: collect the node's facts with the collection's collectors (``_collect.collect_all``, in a forked child
bounded by ``collect_timeout``; every tool call inside has its own timeout), evaluate them with the same policy
code the inspection uses (``_checks.evaluate_node``, ``_cluster.node_assessment``), decide (pure:
:func:`decide`) whether to drain the node with the owned ``gpuops:`` reason or to resume a drain of its own,
call ``scontrol`` (bounded), and write the verdict to a private state file (0600) and a node_exporter textfile.
A verdict therefore never depends on which path (this program or the controller's inspection) saw the fault.

Deployed by the role ``gpuops.cluster.health_check`` as a zipapp (``_health_check_bundle``) with the controller's
merged policy and the node's hardware profile inside; docs/health_check.md, metrics in docs/metrics.md.
Python 3.8+, stdlib only, no Ansible imports.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import collect_all
from ansible_collections.gpuops.cluster.plugins.module_utils._files import write_private_atomic
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command, run_in_child
from ansible_collections.gpuops.cluster.plugins.module_utils._slurm import node_status
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import utcnow_iso
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy
from ansible_collections.gpuops.cluster.plugins.plugin_utils import checks as _checks
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import cluster as _cluster
from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson

SCHEMA = "gpuops.health_check/v1"
TEXTFILE = "gpuops_node_health.prom"
#: verdict codes of ``gpuops_node_health``
VERDICTS = {"unknown": -1, "healthy": 0, "advice": 1, "degraded": 2, "failed": 3}
#: checks that report missing, unreadable or timed-out evidence: never a drain, the verdict unknown
GAP_CHECKS = ("collector.error",)
DEFAULTS: Dict[str, Any] = {
    "node_name": None,  # Slurm NodeName; default $SLURMD_NODENAME, else the short hostname
    "host": None,  # inventory hostname (finding ids); default node_name
    "policy": None,  # the merged policy; None = the collection's defaults
    "profile": None,  # the node's hardware profile (dict) or None
    "domains": ["gpu", "kernel", "ib", "slurm", "node"],
    "collect_options": {},
    "call_timeout": 2.0,  # per fact domain (each tool call inside is bounded by it)
    "collect_timeout": 7.0,  # the whole collection (forked child, killed after it)
    "scontrol_timeout": 2.0,
    "scontrol_path": "scontrol",
    "reason_prefix": "gpuops:",
    "drain": True,
    "resume": True,
    "drain_actions": list(_policy.DISRUPTIVE_ACTIONS),  # each needs the node out of service first
    "drain_severities": ["P0", "P1"],
    # an expected IB port DOWN (Polling, Disabled) in this many consecutive runs drains the node (0: never); one
    # flap shorter than (ib_down_runs - 1) x HealthCheckInterval does not
    "ib_down_runs": 3,
    "state_file": "/var/lib/gpuops/health_check/state.json",
    "textfile_dir": None,
    "version": None,  # the bundle's content version, set by the bundler
}
#: slurmd starts HealthCheckProgram with SLURMD_NODENAME and nothing else: no PATH to find the tools with
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_LABEL_BAD = re.compile(r"[^A-Za-z0-9_.:/-]+")


class ConfigError(Exception):
    """The program's configuration is unusable (the message says which key)."""


def load_config(raw: Any) -> Dict[str, Any]:
    """``DEFAULTS`` merged with ``raw`` (a mapping); unknown keys and wrong types raise ConfigError."""
    if not isinstance(raw, dict):
        raise ConfigError("the configuration must be a JSON object")
    unknown = sorted(set(raw) - set(DEFAULTS))
    if unknown:
        raise ConfigError("unknown configuration key(s): %s" % ", ".join(unknown))
    cfg = dict(DEFAULTS)
    cfg.update(raw)
    for key in ("call_timeout", "collect_timeout", "scontrol_timeout"):
        if not isinstance(cfg[key], (int, float)) or isinstance(cfg[key], bool) or not 0 < cfg[key] <= 60:
            raise ConfigError("%s must be a number of seconds in (0, 60]" % key)
    runs = cfg["ib_down_runs"]
    if not isinstance(runs, int) or isinstance(runs, bool) or not 0 <= runs <= 100:
        raise ConfigError("ib_down_runs must be an integer in [0, 100] (0: never drain for a port down)")
    for key in ("domains", "drain_actions", "drain_severities"):
        if not isinstance(cfg[key], list) or not all(isinstance(v, str) for v in cfg[key]):
            raise ConfigError("%s must be a list of strings" % key)
    if not str(cfg["reason_prefix"]).strip():
        raise ConfigError("reason_prefix must not be empty")
    try:
        # the controller's merged policy, validated again over the defaults of this very build (same hash)
        cfg["policy"] = _policy.merge_policy(_policy.DEFAULT_POLICY, cfg["policy"] or {})
        _policy.validate_profile(cfg["profile"])
    except _policy.PolicyError as exc:
        raise ConfigError("policy: %s" % exc) from None
    return cfg


def policy_version(policy: Dict[str, Any]) -> str:
    """The first 12 hex digits of ``_policy.policy_hash`` (report.json's ``policy_hash`` names the same policy)."""
    return _policy.policy_hash(policy).split(":", 1)[1][:12]


def node_name(cfg: Dict[str, Any], env: Optional[Dict[str, str]] = None) -> str:
    env = os.environ if env is None else env
    return str(cfg.get("node_name") or env.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0])


# ------------------------------------------------------------------------------------------------------------
# the verdict (pure)


def verdict(status: str, findings: Sequence[Dict[str, Any]]) -> int:
    """``gpuops_node_health``: the node status of the report (docs/findings.md) as a number."""
    if status in ("faulty", "unreachable"):
        return VERDICTS["failed"]
    if status == "error":
        return VERDICTS["unknown"]
    if status == "degraded":
        return VERDICTS["degraded"]
    if any(f.get("severity") == "P3" for f in findings):
        return VERDICTS["advice"]
    return VERDICTS["healthy"]


def drain_targets(findings: Sequence[Dict[str, Any]], cfg: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Findings that isolate the node from the node itself.

    The severity and action the policy gave (``drain_severities``: P0/P1; ``drain_actions``: the policy's
    disruptive actions - isolate, reboot, reset_gpu, replace, emergency_shutdown - each of which needs the node
    out of service first; an Xid 79 is P1 ``reboot``); never a withheld one (its evidence could not be read) and never a check the
    policy correlates across a domain (``correlation.checks``: a leaf or PSU fault seen by every member is the
    controller's call, not a mass self-drain).
    """
    correlated = set(cfg["policy"].get("correlation", {}).get("checks") or [])
    return [
        f
        for f in findings
        if f.get("severity") in cfg["drain_severities"]
        and f.get("action") in cfg["drain_actions"]
        and not _policy.is_withheld(f)
        and f.get("check") not in correlated
        and f.get("check") not in GAP_CHECKS
    ]


#: ib.port_state codes of a port that is down (state DOWN: physically Polling, Disabled, Sleep...); INIT/ARMED is the
#: subnet manager's (a P0 about the SM when many nodes see it), a missing port is the profile's
IB_DOWN_CODES = ("DOWN",)


def ib_down_streaks(findings: Sequence[Dict[str, Any]], previous: Any) -> Dict[str, int]:
    """Consecutive runs each expected IB port was seen DOWN: ``{port: runs}``. Pure.

    A port counts when this run has an ``ib.port_state`` finding for it with a DOWN code (the port is expected up:
    by the profile's ``ib_ports`` or by its Active peers of the same adapter model, checks/ib.py, checks/fleet.py);
    a port not seen DOWN in this run drops out (a flap that came back starts from zero)."""
    prev = previous if isinstance(previous, dict) else {}
    out: Dict[str, int] = {}
    for f in findings:
        if f.get("check") == "ib.port_state" and f.get("code") in IB_DOWN_CODES and not _policy.is_withheld(f):
            port = str(f.get("component"))
            before = prev.get(port)
            out[port] = (before if isinstance(before, int) and not isinstance(before, bool) and before > 0 else 0) + 1
    return out


def ib_down_targets(
    findings: Sequence[Dict[str, Any]], streaks: Dict[str, int], cfg: Dict[str, Any]
) -> List[Dict[str, Any]]:
    """``ib.port_state`` DOWN findings whose port has been down ``ib_down_runs`` runs in a row (drain targets).

    ``ib.port_state`` is a correlated check (a dead leaf darkens every member: the controller's one P0, not N
    drains), so a single run never drains for it; a port that stays down for several runs is contained from the
    node (a job placed on a node without its fabric fails), and the node resumes itself once the port is Active
    again. A leaf failure therefore drains its members after ``ib_down_runs`` runs and resumes them when it is
    back; the controller's correlation still raises the one P0 for the leaf."""
    need = cfg.get("ib_down_runs") or 0
    if need <= 0:
        return []
    return [
        f
        for f in findings
        if f.get("check") == "ib.port_state"
        and f.get("code") in IB_DOWN_CODES
        and not _policy.is_withheld(f)
        and streaks.get(str(f.get("component")), 0) >= need
    ]


def evidence_gap(
    status: str, why: Optional[str], findings: Sequence[Dict[str, Any]], domains: Optional[Dict[str, Any]] = None
) -> Tuple[str, Optional[str]]:
    """The node's status with evidence gaps as unknown: ``(status, why)``. Pure.

    A collector that failed, timed out or spent its budget (``collector.error``, e.g. the policy's P1 ``reboot``
    for ``gpu:timeout``) says "I could not see", not "it is broken": on a loaded node the tools answer late and
    the check must not drain healthy nodes for it. A node that is ``faulty`` only through such findings is
    ``error`` (verdict unknown, never drained); a real fault read alongside a gap stays ``faulty``.
    """
    if status != "faulty":
        return status, why
    unknown = {d for d, st in (domains or {}).items() if isinstance(st, dict) and st.get("state") == "unknown"}
    for f in findings:  # a P0/P1 read from evidence (node_assessment's own test), other than a gap: a fault
        if f.get("severity") in ("P0", "P1") and f.get("check") not in GAP_CHECKS and not _policy.is_withheld(f):
            if _checks.finding_domain(f) not in unknown:
                return status, why
    gaps = [f for f in findings if f.get("check") in GAP_CHECKS]
    first = gaps[0].get("message") if gaps else why
    return "error", "evidence unreadable (unknown, not a fault): %s" % first


def label(value: Any, limit: int = 48) -> str:
    """A bounded Prometheus label value: components are hardware names, never free text."""
    text = _LABEL_BAD.sub("_", str(value if value is not None else "")).strip("_")
    return text[:limit] or "none"


def own_reason(finding: Dict[str, Any], prefix: str) -> str:
    """The owned reason: ``gpuops: <check> <component>`` (the slurm_node module's and the guard's prefix)."""
    return "%s %s %s" % (prefix, label(finding.get("check")), label(finding.get("component")))


def decide(
    slurm: Optional[Dict[str, Any]],
    targets: Sequence[Dict[str, Any]],
    code: int,
    recorded: Optional[str],
    cfg: Dict[str, Any],
) -> Dict[str, Any]:
    """What to do with the node: ``{"action": drain|resume|none, "reason", "why", "ours"}``. Pure.

    ``slurm``: ``_slurm.node_status`` of this node, or None (the scheduler could not be read: nothing is done).
    ``recorded``: the reason this program set last time (state file). A drain is ours only while the node's
    reason is exactly that text: a human's drain, or ours edited by a human, is never touched.
    """
    if slurm is None:  # what we cannot see we keep: the recorded drain stays ours
        return _plan("none", recorded, "scheduler state unreadable", bool(recorded))
    held = bool(slurm.get("drain") or slurm.get("down"))
    ours = bool(held and recorded and slurm.get("reason") == recorded)
    if code == VERDICTS["unknown"]:
        return _plan("none", recorded if ours else None, "evidence unreadable", ours)
    if targets:
        return _on_fault(targets, held, ours, recorded, cfg)
    if ours and code != VERDICTS["failed"]:
        if not cfg["resume"] or slurm.get("down"):
            return _plan("none", recorded, "clean; resume disabled or node down", True)
        return _plan("resume", None, "clean: own drain lifted", False)
    return _plan("none", recorded if ours else None, "nothing to do", ours)


def _plan(action: str, reason: Optional[str], why: Any, ours: bool) -> Dict[str, Any]:
    return {"action": action, "reason": reason, "why": why, "ours": ours}


def _on_fault(
    targets: Sequence[Dict[str, Any]], held: bool, ours: bool, recorded: Optional[str], cfg: Dict[str, Any]
) -> Dict[str, Any]:
    if ours:
        return _plan("none", recorded, "already drained by this check", True)
    if held:
        return _plan("none", None, "drained by someone else: left alone", False)
    if not cfg["drain"]:
        return _plan("none", None, "drain disabled (report only)", False)
    return _plan("drain", own_reason(targets[0], cfg["reason_prefix"]), targets[0].get("message"), True)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _series(name: str, labels: Dict[str, str], value: Any) -> str:
    inner = ",".join('%s="%s"' % (k, _escape(str(v))) for k, v in labels.items())
    return "%s{%s} %s" % (name, inner, value)


def render_textfile(result: Dict[str, Any]) -> str:
    """The node_exporter textfile of one run (docs/metrics.md "Node-side health check")."""
    node = result["node"]
    head = {"node": node}
    lines = [
        "# HELP gpuops_node_health Node-side verdict: 0 healthy, 1 advice (P3), 2 degraded (P2), "
        "3 failed (P0/P1), -1 unknown (evidence unreadable).",
        "# TYPE gpuops_node_health gauge",
        _series("gpuops_node_health", head, result["verdict"]),
        "# HELP gpuops_node_health_finding One series per finding of the last run (bounded labels).",
        "# TYPE gpuops_node_health_finding gauge",
    ]
    seen = set()
    for f in result["findings"]:
        labels = {
            "node": node,
            "check": label(f.get("check")),
            "severity": label(f.get("severity")),
            "action": label(f.get("action")),
            "component": label(f.get("component")),
        }
        key = tuple(labels.values())
        if key not in seen:
            seen.add(key)
            lines.append(_series("gpuops_node_health_finding", labels, 1))
    lines += [
        "# HELP gpuops_node_health_drained 1 while this node is drained by the health check's own gpuops: reason.",
        "# TYPE gpuops_node_health_drained gauge",
        _series("gpuops_node_health_drained", head, 1 if result["drained"] else 0),
        "# HELP gpuops_node_health_run_seconds Wall time of the last run.",
        "# TYPE gpuops_node_health_run_seconds gauge",
        _series("gpuops_node_health_run_seconds", head, "%.3f" % result["run_seconds"]),
        "# HELP gpuops_node_health_last_run_timestamp_seconds When the last run ended (Unix time).",
        "# TYPE gpuops_node_health_last_run_timestamp_seconds gauge",
        _series("gpuops_node_health_last_run_timestamp_seconds", head, "%.3f" % result["timestamp"]),
        "# HELP gpuops_node_health_policy_info The policy the node runs (sha256 prefix of the merged policy).",
        "# TYPE gpuops_node_health_policy_info gauge",
        _series("gpuops_node_health_policy_info", dict(head, policy_version=result["policy_version"]), 1),
    ]
    return "\n".join(lines) + "\n"


def write_textfile(directory: str, text: str) -> str:
    """Write ``<directory>/gpuops_node_health.prom`` atomically, mode 0640, as the inspection writes gpuops.prom
    (docs/metrics.md): node_exporter reads it through the group of its setgid textfile directory; the file
    names the node's faults, so it is not world-readable. The directory must exist (it is node_exporter's)."""
    if not os.path.isdir(directory):
        raise NotADirectoryError("textfile directory %r does not exist or is not a directory" % directory)
    return write_private_atomic(os.path.join(directory, TEXTFILE), text, 0o640)


# ------------------------------------------------------------------------------------------------------------
# one run


def load_state(path: str) -> Dict[str, Any]:
    """The previous run's state (empty when missing or unreadable: a broken file never stops the check)."""
    try:
        with open(path, "rb") as fh:
            data = _safejson.loads(fh.read(8 * 1024 * 1024), what="the health check's state")
        return data if isinstance(data, dict) and data.get("schema") == SCHEMA else {}
    except (OSError, ValueError):
        return {}


def _collect(cfg: Dict[str, Any], node: str) -> Dict[str, Any]:
    options = {k: dict(v) for k, v in (cfg["collect_options"] or {}).items() if isinstance(v, dict)}
    options.setdefault("slurm", {}).setdefault("node", node)
    out = run_in_child(collect_all, (None, cfg["domains"], cfg["call_timeout"], options), cfg["collect_timeout"])
    if out.get("ok") and isinstance(out.get("value"), dict):
        return out["value"]
    why = out.get("error") or "collection failed"
    # nothing was read: every domain unknown, never "0 GPUs" (docs/findings.md "Unknown is not broken")
    return {"hostname": node, "errors": [{"domain": "collect", "kind": "timeout", "message": str(why)}]}


def _slurm_status(facts: Dict[str, Any], node: str, prefix: str) -> Optional[Dict[str, Any]]:
    slurm = facts.get("slurm") if isinstance(facts.get("slurm"), dict) else {}
    if slurm.get("errors"):
        return None
    for n in slurm.get("nodes") or []:
        if isinstance(n, dict) and n.get("name") == node:
            return node_status(n, [], prefix)
    return None


def apply(plan: Dict[str, Any], node: str, cfg: Dict[str, Any], timeout: float) -> Optional[str]:
    """Run the plan's ``scontrol update`` (bounded); the error text, or None when it worked or nothing ran."""
    if plan["action"] == "drain":
        argv = ["update", "NodeName=%s" % node, "State=DRAIN", "Reason=%s" % plan["reason"]]
    elif plan["action"] == "resume":
        argv = ["update", "NodeName=%s" % node, "State=RESUME"]
    else:
        return None
    res = run_command([cfg["scontrol_path"]] + argv, timeout=max(0.5, timeout))
    return None if res.ok else res.describe()


def run(cfg: Dict[str, Any], env: Optional[Dict[str, str]] = None, write: bool = True) -> Dict[str, Any]:
    """One health check run; returns the result written to the state file. Never raises on node faults."""
    t0, c0 = time.monotonic(), sum(os.times()[:4])
    node = node_name(cfg, env)
    host = str(cfg.get("host") or node)
    state = load_state(cfg["state_file"])
    facts = _collect(cfg, node)
    findings, host_state = _checks.evaluate_node(
        facts, cfg["profile"], cfg["policy"], state.get("host_state") or {}, utcnow_iso(), host
    )
    domains = _checks.domain_states(facts, cfg["profile"], cfg["policy"])
    status, why = _cluster.node_assessment(findings, facts, cfg["policy"], domains)
    status, why = evidence_gap(status, why, findings, domains)
    code = verdict(status, findings)
    slurm = _slurm_status(facts, node, cfg["reason_prefix"])
    streaks = ib_down_streaks(findings, state.get("ib_down_runs"))
    targets = drain_targets(findings, cfg) + ib_down_targets(findings, streaks, cfg)
    plan = decide(slurm, targets, code, state.get("own_reason"), cfg)
    error = apply(plan, node, cfg, cfg["scontrol_timeout"]) if write else None
    if error:
        resuming = plan["action"] == "resume"  # a failed resume leaves our drain; a failed drain is not ours
        plan = dict(plan, error=error, ours=resuming, reason=state.get("own_reason") if resuming else None)
    result = {
        "schema": SCHEMA,
        "node": node,
        "host": host,
        "version": cfg.get("version"),
        "policy_version": policy_version(cfg["policy"]),
        "status": status,
        "status_reason": why,
        "verdict": code,
        "findings": [
            {k: f.get(k) for k in ("id", "check", "severity", "action", "component", "code", "message")}
            for f in findings
        ],
        "domains": {d: s.get("state") for d, s in domains.items()},
        "decision": plan,
        "own_reason": plan["reason"] if plan.get("ours") else None,
        "drained": bool(plan.get("ours")),
        "timestamp": time.time(),
        "finished_at": utcnow_iso(),
        "host_state": host_state,
        "ib_down_runs": streaks,
    }
    result["run_seconds"] = round(time.monotonic() - t0, 3)
    # CPU of the program and every tool it ran (reaped children): the figure a loaded machine does not inflate
    result["cpu_seconds"] = round(sum(os.times()[:4]) - c0, 3)
    if write:
        write_private_atomic(cfg["state_file"], json.dumps(result, sort_keys=True, default=str), 0o600)
        if cfg.get("textfile_dir"):
            write_textfile(cfg["textfile_dir"], render_textfile(result))
    return result


def main(argv: Optional[Sequence[str]] = None, embedded: Optional[Dict[str, Any]] = None) -> int:
    """``[--config FILE] [--dry-run] [--json]``; exit 0 after a run (Slurm ignores the status), 2 on bad config."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not os.environ.get("PATH"):
        os.environ["PATH"] = DEFAULT_PATH
    raw: Any = embedded
    try:
        if "--config" in args:
            i = args.index("--config")
            if i + 1 >= len(args):
                raise ConfigError("--config needs a file")
            with open(args[i + 1], "rb") as fh:
                raw = _safejson.loads(fh.read(), what="the configuration")
        cfg = load_config(raw if raw is not None else {})
    except (OSError, ValueError, ConfigError) as exc:
        sys.stderr.write("gpuops-health-check: configuration error: %s\n" % exc)
        return 2
    try:
        result = run(cfg, write="--dry-run" not in args)
    except OSError as exc:  # the state or textfile directory: say so, Slurm logs stderr
        sys.stderr.write("gpuops-health-check: %s\n" % exc)
        return 1
    if "--json" in args:
        sys.stdout.write(json.dumps({k: v for k, v in result.items() if k != "host_state"}, indent=1) + "\n")
    else:
        sys.stdout.write(
            "gpuops-health-check %s: verdict %s (%s), %s, %.2f s\n"
            % (result["node"], result["verdict"], result["status"], result["decision"]["action"], result["run_seconds"])
        )
    return 0
