# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What was read of each fact domain, the gate on unknown domains, and the collector.error check."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.catalogue import (
    CHECK_DOMAINS,
    FACT_DOMAINS,
    PROFILE_DOMAINS,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.checks.context import (
    Ctx,
    as_dict,
    as_list,
    as_str,
    sev_action,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import DEFAULT_POLICY, withhold_disruptive


def _err_text(e: Dict[str, Any]) -> str:
    text = "%s: %s" % (e.get("kind") or "error", e.get("message") or "no detail")
    if e.get("source"):
        text += " (%s)" % e.get("source")
    return text[:300]


def needed_domains(profile: Any, policy: Optional[Dict[str, Any]] = None) -> List[str]:
    """Fact domains that must be read for this node: the policy's required ones and those the profile sets."""
    policy = policy if policy is not None else DEFAULT_POLICY
    needs = {str(d) for d in as_list(as_dict(policy.get("collector_errors")).get("required_domains"))}
    for key, dom in PROFILE_DOMAINS.items():
        value = as_dict(profile).get(key)
        if value is not None and value is not False and value != "" and value != []:
            needs.add(dom)
    return sorted(needs)


def domain_states(
    facts: Any, profile: Any = None, policy: Optional[Dict[str, Any]] = None
) -> Dict[str, Dict[str, Any]]:
    """What was read of each fact domain: ``{domain: {"state", "needed", "reason"}}`` (docs/findings.md).

    ``state``: ``ok`` (read, no collector error), ``partial`` (read, with collector errors: what was read is
    evidence, checks that need the whole list -- GPU count, IB port presence -- skip) or ``unknown`` (nothing
    was read: the collector failed, the capture has none of the domain's files, the domain was not collected,
    or the whole collection failed, e.g. a capture directory that does not exist). A live collector that ran
    cleanly and found nothing (no IB stack on the node) read the domain completely: ``ok``, empty.
    ``needed``: the policy requires the domain (``collector_errors.required_domains``) or the profile sets
    expectations on it (``PROFILE_DOMAINS``); a needed domain that is unknown makes the node ``error``.
    ``reason``: why a domain is not ``ok`` (the first collector error, or "not captured"/"not collected").
    """
    needs = set(needed_domains(profile, policy))
    f = facts if isinstance(facts, dict) else {}
    top = [e for e in as_list(f.get("errors")) if isinstance(e, dict)]
    whole = [e for e in top if e.get("domain") not in FACT_DOMAINS]
    unreachable = not isinstance(facts, dict) or bool(f.get("unreachable"))
    out: Dict[str, Dict[str, Any]] = {}
    for dom in FACT_DOMAINS:
        d = f.get(dom)
        own = [e for e in as_list(as_dict(d).get("errors")) if isinstance(e, dict)]
        if not own:  # collect_all copies every domain error to the top level; hand-made facts may have only those
            own = [e for e in top if e.get("domain") == dom]
        if unreachable:
            state, reason = "unknown", "node unreachable"
        elif not isinstance(d, dict):
            state = "unknown"
            reason = _err_text(whole[0]) if whole else "not collected"
        elif not d.get("source") and (own or f.get("mode") == "capture"):
            state = "unknown"
            if own:
                reason = _err_text(own[0])
            elif whole:
                reason = _err_text(whole[0])
            else:
                reason = "not captured (none of the domain's files in the capture)"
        elif own:
            state, reason = "partial", _err_text(own[0])
        else:
            state, reason = "ok", None
        out[dom] = {"state": state, "needed": dom in needs, "reason": reason}
    return out


def unknown_domains(states: Dict[str, Dict[str, Any]]) -> List[str]:
    return [d for d in FACT_DOMAINS if as_dict(states.get(d)).get("state") == "unknown"]


def finding_domain(finding: Dict[str, Any]) -> Optional[str]:
    """The fact domain a finding's evidence comes from (None: the node as a whole)."""
    check = finding.get("check")
    if check == "collector.error":
        comp = str(finding.get("component") or "")
        dom = comp.split(":", 1)[1] if comp.startswith("collector:") else None
        return dom if dom in FACT_DOMAINS else None
    return CHECK_DOMAINS.get(str(check))


def gate_unknown(ctx: Ctx, states: Dict[str, Dict[str, Any]]) -> None:
    """No disruptive action from a domain that could not be read, nor from a node of which nothing was read."""
    unknown = set(unknown_domains(states))
    nothing_read = len(unknown) == len(FACT_DOMAINS)
    for f in ctx.findings.values():
        if f.get("check") == "node.unreachable":
            continue  # a node that does not answer is an observation (docs/isolation.md), not missing evidence
        dom = finding_domain(f)
        if dom in unknown:
            why = "%s data unknown: %s" % (dom, states[dom].get("reason"))
        elif nothing_read:
            why = "nothing could be read from this node: %s" % (states["gpu"].get("reason"))
        else:
            continue
        withhold_disruptive(f, why)


def check_collector_errors(ctx: Ctx, facts: Dict[str, Any]) -> None:
    ce = ctx.policy["collector_errors"]
    seen = set()
    errs = []
    pools = [facts.get("errors")] + [
        as_dict(facts.get(d)).get("errors") for d in ("gpu", "kernel", "ib", "bmc", "dcgm", "slurm", "node")
    ]
    for pool in pools:
        for e in as_list(pool):
            if not isinstance(e, dict):
                continue
            key = tuple(as_str(e.get(k)) for k in ("domain", "kind", "message", "source", "line"))
            if key not in seen:
                seen.add(key)
                errs.append(e)
    groups: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    for e in errs:
        groups.setdefault((str(e.get("domain") or "unknown"), str(e.get("kind") or "internal")), []).append(e)
    for (domain, kind), es in sorted(groups.items()):
        if (
            domain == "gpu"
            and kind == "unreadable"
            and any(f["check"] == "gpu.missing" and f["code"] == "unreadable" for f in ctx.findings.values())
        ):
            continue  # already a gpu.missing finding per GPU
        key = "%s:%s" % (domain, kind)
        sa = sev_action(ce["overrides"], key)
        sev, action = sa or (ce["default"]["severity"], ce["default"]["action"])
        required = domain in ce["required_domains"]
        ctx.add(
            "collector.error",
            sev,
            "collector:%s" % domain,
            kind,
            "%s collector %s: %s%s"
            % (domain, kind, es[0].get("message"), " (+%d more)" % (len(es) - 1) if len(es) > 1 else ""),
            action,
            "collector_errors.%s" % ("overrides[%s]" % key if sa else "default")
            + ("; required domain" if required else ""),
            evidence={
                "required": required,
                "count": len(es),
                "errors": [{k: e.get(k) for k in ("message", "source", "parser", "line")} for e in es[:3]],
            },
        )
