# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The storage checks (docs/checks.md "Storage checks"): storage facts (``_storage.collect_storage``) -> findings.

``check_storage(storage_facts, policy, now, host=None)``: ``storage.capacity`` (space and inode watermarks per
filesystem and per target), ``storage.health`` (targets, servers, NSDs, connections, mounts that do not answer),
``storage.throughput`` (the opt-in probe against its baseline) and ``collector.error`` (missing or unreadable
evidence: never a disruptive action). ``host=None`` makes cluster findings (ids ``cluster:<check>:...``).
``correlate_storage(per_host, policy, now)``: the same storage.health finding on every inspected node becomes
one cluster finding that explains the node findings (their action becomes ``monitor``, ``cause`` its id).

Pure Python, no Ansible imports; runs on the controller.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import (
    ACTIONS,
    DEFAULT_POLICY,
    DISRUPTIVE_ACTIONS,
    SEVERITIES,
    PolicyError,
    is_withheld,
    respond_by,
    severity_rank,
)

CHECKS = ("storage.capacity", "storage.health", "storage.throughput")


def _pct_ok(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 100


def validate_storage_policy(policy: Dict[str, Any]) -> None:
    """Raise PolicyError (naming the dotted key) for a ``thresholds.storage`` block the checks cannot use."""
    th = policy["thresholds"]["storage"]
    for name in ("capacity", "inodes"):
        rule, path = th[name], "thresholds.storage.%s" % name
        if not (_pct_ok(rule["p2_pct"]) and _pct_ok(rule["p1_pct"])) or rule["p2_pct"] > rule["p1_pct"]:
            raise PolicyError("policy keys '%s.p2_pct' and '%s.p1_pct' must be percentages, p2 <= p1" % (path, path))
    share = th["throughput"]["min_share"]
    if not isinstance(share, (int, float)) or isinstance(share, bool) or not 0 < share <= 1:
        raise PolicyError("policy key 'thresholds.storage.throughput.min_share' must be in (0, 1]")
    for path, rule in (
        ("health", th["health"]),
        ("throughput", th["throughput"]),
        ("nfs_soft_mount", th["nfs_soft_mount"]),
        ("nfs_retrans", th["nfs_retrans"]),
    ):
        if rule["severity"] not in SEVERITIES:
            raise PolicyError("policy key 'thresholds.storage.%s.severity' must be one of %s" % (path, SEVERITIES))
        if rule["action"] not in ACTIONS or rule["action"] in DISRUPTIVE_ACTIONS:
            raise PolicyError(
                "policy key 'thresholds.storage.%s.action' must be a non-disruptive action (the nodes are not "
                "the storage): monitor, contact_vendor, tune or none" % path
            )
    nr = th["nfs_retrans"]
    if not _pct_ok(nr["pct"]) or not isinstance(nr["min_calls"], int) or nr["min_calls"] < 1:
        raise PolicyError(
            "policy keys 'thresholds.storage.nfs_retrans.pct' (0-100] and '.min_calls' (>= 1) are invalid"
        )
    _validate_states(th.get("states"))
    least = th["correlation_min_nodes"]
    if not isinstance(least, int) or isinstance(least, bool) or least < 1:
        raise PolicyError("policy key 'thresholds.storage.correlation_min_nodes' must be an integer >= 1")


#: The state tables of ``thresholds.storage.states`` (docs/checks.md "storage.health").
STATE_TABLES = ("lustre_target", "lustre_server", "gpfs_component", "gpfs_event", "gpfs_disk")


def _validate_states(states: Any) -> None:
    if not isinstance(states, dict):
        raise PolicyError("policy key 'thresholds.storage.states' must be a mapping of state tables")
    for table in STATE_TABLES:
        rows = states.get(table)
        if not isinstance(rows, dict):
            raise PolicyError("policy key 'thresholds.storage.states.%s' must be a mapping" % table)
        for word, rule in rows.items():
            path = "thresholds.storage.states.%s.%s" % (table, word)
            if not isinstance(rule, dict) or set(rule) - {"severity", "action", "source"}:
                raise PolicyError("policy key '%s' must be a mapping of severity, action and source" % path)
            if rule.get("severity") not in SEVERITIES + ("none",):
                raise PolicyError("policy key '%s.severity' must be one of %s or none" % (path, ", ".join(SEVERITIES)))
            if rule.get("action") not in ACTIONS or rule.get("action") in DISRUPTIVE_ACTIONS:
                raise PolicyError(
                    "policy key '%s.action' must be a non-disruptive action (the nodes are not the storage)" % path
                )


def _num(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


class _Out:
    def __init__(self, policy: Dict[str, Any], now: Any, host: Optional[str]) -> None:
        self.policy, self.now, self.host = policy, now, host
        self.findings: Dict[str, Dict[str, Any]] = {}

    def add(
        self,
        check: str,
        severity: str,
        where: Tuple[str, str],
        message: str,
        action: str,
        rule: str,
        evidence: Dict[str, Any],
    ) -> None:
        component, code = where
        fid = "%s:%s:%s:%s" % (self.host if self.host else "cluster", check, component, code)
        old = self.findings.get(fid)
        if old is not None and old["severity"] <= severity:
            return
        self.findings[fid] = {
            "check": check,
            "severity": severity,
            "component": component,
            "code": code,
            "message": message,
            "action": action,
            "rule": rule,
            "respond_by": respond_by(severity, self.now, self.policy),
            "evidence": evidence,
            "host": self.host,
            "cause": None,
            "id": fid,
        }


def _level(pct: Optional[float], rule: Dict[str, Any]) -> Optional[Tuple[str, float]]:
    if pct is None:
        return None
    if pct >= rule["p1_pct"]:
        return "P1", rule["p1_pct"]
    if pct >= rule["p2_pct"]:
        return "P2", rule["p2_pct"]
    return None


def _capacity(out: _Out, fs: Dict[str, Any], th: Dict[str, Any]) -> None:
    name = str(fs.get("name") or fs.get("mount") or "?")
    items = [("storage:%s" % name, "filesystem %s" % name, fs)]
    for t in fs.get("targets") or []:
        if isinstance(t, dict):
            items.append(
                (
                    "storage:%s/%s" % (name, t.get("name")),
                    "%s %s of %s" % (t.get("kind") or "target", t.get("name"), name),
                    t,
                )
            )
    for comp, what, rec in items:
        for code, key, rule_name, noun in (
            ("space", "used_pct", "capacity", "space"),
            ("inodes", "inode_used_pct", "inodes", "inodes"),
        ):
            pct = _num(rec.get(key))
            hit = _level(pct, th[rule_name])
            if hit is None:
                continue
            sev, limit = hit
            out.add(
                "storage.capacity",
                sev,
                (comp, code),
                "%s: %s %.0f%% used (%s at %s%%): new writes%s will fail when it fills"
                % (what, noun, pct, sev, limit, "" if code == "space" else " (file creation)"),
                "monitor",
                "thresholds.storage.%s.%s_pct=%s" % (rule_name, sev.lower(), limit),
                {
                    "filesystem": name,
                    "mount": fs.get("mount"),
                    "type": fs.get("type"),
                    key: pct,
                    "target": rec.get("name") if rec is not fs else None,
                },
            )


def _state_rule(th: Dict[str, Any], table: str, word: Any) -> Optional[Dict[str, Any]]:
    """The policy row of a state word, or None: the word is no fault (severity none) or unknown (not in the table)."""
    rule = th["states"][table].get(str(word)) if word is not None else None
    if not isinstance(rule, dict) or rule.get("severity") not in SEVERITIES:
        return None
    return dict(rule, path="thresholds.storage.states.%s.%s" % (table, word))


def _add_state(out: _Out, where: Tuple[str, str], message: str, rule: Dict[str, Any], evidence: Dict[str, Any]) -> None:
    evidence = dict(evidence, source=rule.get("source"))
    out.add("storage.health", rule["severity"], where, message, rule["action"], rule["path"], evidence)


def _worst(*rules: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    found = [r for r in rules if r]
    return min(found, key=lambda r: severity_rank(r["severity"])) if found else None


def _target_health(out: _Out, th: Dict[str, Any], name: str, t: Dict[str, Any]) -> None:
    comp = "storage:%s/%s" % (name, t.get("name"))
    what = "%s %s of %s" % (t.get("kind") or "target", t.get("name"), name)
    state = t.get("state")
    if t.get("kind") == "NSD":  # mmlsdisk: status and availability, the worse one grades the disk
        status, avail = t.get("status"), t.get("availability")
        if status is None and isinstance(state, str) and "/" in state:
            status, avail = state.split("/", 1)
        rule = _worst(_state_rule(th, "gpfs_disk", avail), _state_rule(th, "gpfs_disk", status))
        if rule:
            _add_state(
                out,
                (comp, "%s/%s" % (status, avail)),
                "%s: mmlsdisk status %s, availability %s (%s)" % (what, status, avail, rule.get("source")),
                rule,
                {"filesystem": name, "target": t},
            )
        return
    if state not in (None, "active"):
        rule = _state_rule(th, "lustre_target", state)
        if rule:
            _add_state(
                out,
                (comp, str(state)),
                "%s is %s%s" % (what, state, ": %s" % t["detail"] if t.get("detail") else ""),
                rule,
                {"filesystem": name, "target": t},
            )
    for flag in t.get("flags") or []:
        word = "flag:unknown" if str(flag).startswith("unknown:") else "flag:%s" % flag
        rule = _state_rule(th, "lustre_target", word)
        if rule:
            _add_state(
                out,
                (comp, str(flag).replace(":", "_")),
                "%s: lfs df -v flag %s (%s)" % (what, flag, rule.get("source")),
                rule,
                {"filesystem": name, "target": t},
            )


def _gpfs_rows(th: Dict[str, Any], servers: List[Dict[str, Any]]) -> List[Tuple[Dict[str, Any], Dict[str, Any]]]:
    """The mmhealth rows to report: graded, less the roll-ups (a node's NODE row, a component's row for the node)
    that a more specific row of the same node explains at the same severity or worse."""
    graded = []
    for s in servers:
        table = "gpfs_component"
        rule = _state_rule(th, table, s.get("status") or str(s.get("state") or "").upper())
        if rule:
            graded.append((s, rule))

    def covered(s: Dict[str, Any], rule: Dict[str, Any]) -> bool:
        node, comp = s.get("node"), s.get("component")
        rollup_node = comp == "NODE"
        rollup_comp = s.get("entity") == node
        for o, orule in graded:
            if o is s or o.get("node") != node or severity_rank(orule["severity"]) > severity_rank(rule["severity"]):
                continue
            if rollup_node and o.get("component") != "NODE":
                return True
            if rollup_comp and not rollup_node and o.get("component") == comp and o.get("entity") != node:
                return True
        return False

    return [(s, r) for s, r in graded if not (s.get("node") and covered(s, r))]


def _gpfs_health(out: _Out, th: Dict[str, Any], servers: List[Dict[str, Any]], events: List[Any]) -> None:
    rows = _gpfs_rows(th, [s for s in servers if str(s.get("kind") or "").startswith("gpfs")])
    events = [e for e in events if isinstance(e, dict)]
    told = set()
    for s, rule in rows:
        mine = [
            e
            for e in events
            if e.get("node") == s.get("node")
            and (e.get("component") == s.get("component") or s.get("component") == "NODE")
        ]
        told.update(id(e) for e in mine)
        evs = ", ".join("%s (%s)" % (e.get("event"), e.get("severity") or "?") for e in mine[:5])
        _add_state(
            out,
            ("storage:server:%s" % s.get("name"), str(s.get("state"))),
            "GPFS %s%s on %s is %s (mmhealth)%s"
            % (
                s.get("component"),
                "" if s.get("entity") in (None, s.get("node")) else " %s" % s.get("entity"),
                s.get("node") or "the cluster",
                s.get("status"),
                ": active events %s" % evs if evs else "",
            ),
            rule,
            {"server": s, "events": mine[:10]},
        )
    for e in events:
        if id(e) in told:
            continue
        rule = _state_rule(th, "gpfs_event", e.get("severity") or "UNKNOWN")
        if not rule:
            continue
        peer = e.get("identifier") or (e.get("entity") if e.get("entity") != e.get("node") else None)
        _add_state(
            out,
            (
                "storage:server:gpfs:%s:%s%s" % (e.get("node"), e.get("component"), "/%s" % peer if peer else ""),
                str(e.get("event")),
            ),
            "mmhealth event %s (%s) on %s: %s; mmhealth keeps %s %s"
            % (
                e.get("event"),
                e.get("severity") or "no severity printed",
                e.get("node"),
                e.get("message") or e.get("arguments") or "",
                e.get("component"),
                _component_status(servers, e),
            ),
            rule,
            {"event": e},
        )


def _component_status(servers: List[Dict[str, Any]], e: Dict[str, Any]) -> str:
    for s in servers:
        if (
            s.get("node") == e.get("node")
            and s.get("component") == e.get("component")
            and s.get("entity") == e.get("node")
        ):
            return str(s.get("status"))
    return "at its reported state"


def _health(out: _Out, facts: Dict[str, Any], th: Dict[str, Any]) -> None:
    sev, action = th["health"]["severity"], th["health"]["action"]
    for fs in facts.get("filesystems") or []:
        if not isinstance(fs, dict):
            continue
        name = str(fs.get("name") or fs.get("mount") or "?")
        if fs.get("responsive") is False:
            out.add(
                "storage.health",
                sev,
                ("storage:%s" % name, "not_responding"),
                "%s filesystem %s at %s does not respond: %s"
                % (fs.get("type"), name, fs.get("mount"), fs.get("error") or "statfs timed out"),
                action,
                "thresholds.storage.health",
                {"filesystem": name, "mount": fs.get("mount"), "error": fs.get("error")},
            )
        for t in fs.get("targets") or []:
            if isinstance(t, dict):
                _target_health(out, th, name, t)
    servers = [s for s in facts.get("servers") or [] if isinstance(s, dict)]
    for s in servers:
        if str(s.get("kind") or "").startswith("gpfs") or s.get("state") in (None, "active"):
            continue
        rule = _state_rule(th, "lustre_server", s.get("state"))
        if rule:
            _add_state(
                out,
                ("storage:server:%s" % s.get("name"), str(s.get("state"))),
                "Lustre %s %s is %s%s"
                % (
                    s.get("kind") or "server",
                    s.get("name"),
                    s.get("state"),
                    ": %s" % s["error"] if s.get("error") else "",
                ),
                rule,
                {"server": s},
            )
    _gpfs_health(out, th, servers, facts.get("events") or [])


def _nfs_soft(out: _Out, facts: Dict[str, Any], rule: Dict[str, Any]) -> None:
    """An NFS mount with ``soft`` (nfs(5): a soft timeout can cause silent data corruption): advice."""
    for fs in facts.get("filesystems") or []:
        opts = fs.get("options") if isinstance(fs, dict) else None
        if fs.get("type") == "nfs" and isinstance(opts, dict) and opts.get("soft") is True:
            name = str(fs.get("name") or fs.get("mount"))
            out.add(
                "storage.health",
                rule["severity"],
                ("storage:%s" % name, "soft_mount"),
                "NFS %s is mounted soft at %s: a server that stalls makes jobs' writes fail with EIO (nfs(5): "
                "silent data corruption); mount it hard" % (name, fs.get("mount")),
                rule["action"],
                "thresholds.storage.nfs_soft_mount (nfs(5) soft/hard)",
                {"filesystem": name, "mount": fs.get("mount"), "options": opts},
            )


def _nfs_retrans(out: _Out, rpc: Any, rule: Dict[str, Any]) -> None:
    """NFS client RPC retransmissions (nfsstat -c, since boot) at or above a share of the calls."""
    if not isinstance(rpc, dict):
        return
    calls, retrans = _num(rpc.get("calls")), _num(rpc.get("retrans"))
    if calls is None or retrans is None or calls < rule["min_calls"]:
        return
    pct = 100.0 * retrans / calls
    if pct >= rule["pct"]:
        out.add(
            "storage.health",
            rule["severity"],
            ("storage:nfs:client_rpc", "retrans"),
            "NFS client retransmitted %.1f%% of its RPC calls (%d of %d since boot): the server or the network "
            "drops or delays requests" % (pct, retrans, calls),
            rule["action"],
            "thresholds.storage.nfs_retrans.pct=%s (min_calls %s)" % (rule["pct"], rule["min_calls"]),
            {"calls": calls, "retrans": retrans, "retrans_pct": round(pct, 2)},
        )


def _throughput(out: _Out, tp: Any, rule: Dict[str, Any]) -> None:
    if not isinstance(tp, dict) or not isinstance(tp.get("baseline"), dict):
        return
    share = rule["min_share"]
    for key, code, unit in (("write_mib_s", "write", "MiB/s"), ("meta_ops_s", "metadata", "ops/s")):
        got, base = _num(tp.get(key)), _num(tp["baseline"].get(key))
        if got is None or base is None or base <= 0 or got >= share * base:
            continue
        out.add(
            "storage.throughput",
            rule["severity"],
            ("storage:probe:%s" % tp.get("path"), code),
            "%s probe on %s: %.1f %s, %.0f%% of the baseline %.1f %s (below %.0f%%)"
            % (code, tp.get("path"), got, unit, 100.0 * got / base, base, unit, 100.0 * share),
            rule["action"],
            "thresholds.storage.throughput.min_share=%s" % share,
            {key: got, "baseline": base, "tool": tp.get("tool"), "path": tp.get("path")},
        )


def _errors(out: _Out, facts: Any, policy: Dict[str, Any]) -> None:
    ce = policy["collector_errors"]["default"]
    if not isinstance(facts, dict):
        out.add(
            "collector.error",
            ce["severity"],
            ("collector:storage", "missing"),
            "storage facts missing: the storage state is unknown (not healthy)",
            "monitor",
            "collector_errors.default; unknown is not broken",
            {},
        )
        return
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for e in facts.get("errors") or []:
        if isinstance(e, dict):
            groups.setdefault(str(e.get("kind") or "internal"), []).append(e)
    for kind, es in sorted(groups.items()):
        out.add(
            "collector.error",
            ce["severity"],
            ("collector:storage", kind),
            "storage collector %s: %s%s"
            % (kind, es[0].get("message"), " (+%d more)" % (len(es) - 1) if len(es) > 1 else ""),
            "monitor",
            "collector_errors.default; unknown is not broken",
            {"count": len(es), "errors": [{k: e.get(k) for k in ("message", "source", "line")} for e in es[:3]]},
        )


def check_storage(
    storage_facts: Any,
    policy: Optional[Dict[str, Any]] = None,
    now: Any = None,
    host: Optional[str] = None,
    collector_errors: bool = True,
) -> List[Dict[str, Any]]:
    """Findings of the storage facts (see the module docstring), sorted by severity then id.

    ``collector_errors=False``: the caller already turns ``storage_facts["errors"]`` into collector.error
    findings (the platform check does, for every platform domain); missing facts are still reported.
    """
    policy = policy if policy is not None else DEFAULT_POLICY
    validate_storage_policy(policy)
    th = policy["thresholds"]["storage"]
    out = _Out(policy, now, host)
    if collector_errors or not isinstance(storage_facts, dict):
        _errors(out, storage_facts, policy)
    if isinstance(storage_facts, dict):
        for fs in storage_facts.get("filesystems") or []:
            if isinstance(fs, dict):
                _capacity(out, fs, th)
        _health(out, storage_facts, th)
        _nfs_soft(out, storage_facts, th["nfs_soft_mount"])
        _nfs_retrans(out, storage_facts.get("nfs_rpc"), th["nfs_retrans"])
        _throughput(out, storage_facts.get("throughput"), th["throughput"])
    return sorted(out.findings.values(), key=lambda f: (f["severity"], f["id"]))


#: Node findings that are storage evidence seen from a node: (check, component prefix) -> cluster component prefix.
_NODE_EVIDENCE = {"node.mounts": ("mount:", "storage:mount:")}


def _storage_key(f: Dict[str, Any]) -> Optional[Tuple[str, str]]:
    """(cluster component, code) of a node finding about storage, or None."""
    if f.get("cause") or is_withheld(f) or f.get("severity") not in ("P0", "P1", "P2"):
        return None
    comp, code = str(f.get("component")), str(f.get("code"))
    if f.get("check") == "storage.health":
        return comp, code
    rule = _NODE_EVIDENCE.get(str(f.get("check")))
    if rule and comp.startswith(rule[0]) and code in ("hung", "missing"):
        return rule[1] + comp[len(rule[0]) :], "not_responding" if code == "hung" else "missing"
    return None


def correlate_storage(
    per_host: Dict[str, List[Dict[str, Any]]], policy: Optional[Dict[str, Any]] = None, now: Any = None
) -> List[Dict[str, Any]]:
    """One cluster finding per storage fault that every inspected host reports.

    ``per_host``: ``{host: [findings]}``: storage.health findings (check_storage with ``host`` set) and the node
    checks' ``node.mounts`` findings (a mount hung or missing: cluster component ``storage:mount:<path>``, code
    ``not_responding`` or ``missing``). A fault found on every host (and at least ``correlation_min_nodes``) is
    one cluster storage.health finding; its members are REWRITTEN IN PLACE: action ``monitor`` (the original in
    ``evidence.original_action``), ``cause`` the cluster finding's id. Call it before ``_cluster.evaluate_cluster``:
    members with a cause take part in no rack/leaf/power correlation (a dead NFS server is not a dead leaf switch).
    Withheld findings (their evidence could not be read) take part in no correlation.
    """
    policy = policy if policy is not None else DEFAULT_POLICY
    th = policy["thresholds"]["storage"]
    hosts = sorted(per_host)
    if len(hosts) < max(1, th["correlation_min_nodes"]):
        return []
    seen: Dict[Tuple[str, str], Dict[str, List[Dict[str, Any]]]] = {}
    for h in hosts:
        for f in per_host[h] or []:
            key = _storage_key(f) if isinstance(f, dict) else None
            if key is not None:
                seen.setdefault(key, {}).setdefault(h, []).append(f)
    out = _Out(policy, now, None)
    for (comp, code), members in sorted(seen.items()):
        if set(members) != set(hosts):
            continue
        first = members[hosts[0]][0]
        out.add(
            "storage.health",
            th["health"]["severity"],
            (comp, code),
            "%s (seen by all %d inspected nodes: one storage fault, not %d node faults)"
            % (first.get("message"), len(hosts), len(hosts)),
            th["health"]["action"],
            "thresholds.storage.correlation_min_nodes=%s; every node" % th["correlation_min_nodes"],
            {"hosts": hosts, "check": first.get("check"), "evidence": dict(first.get("evidence") or {})},
        )
        fid = "cluster:storage.health:%s:%s" % (comp, code)
        for fs in members.values():
            for f in fs:
                ev = f.setdefault("evidence", {})
                if isinstance(ev, dict):
                    ev["original_action"] = f.get("action")
                f["action"], f["cause"] = "monitor", fid
    return list(out.findings.values())
