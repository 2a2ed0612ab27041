"""Ticket payload -> validated run request: the catalogue entry, the nodes, the extra-vars, who asked and who
approved. Nothing here runs anything; `resolve` raises PayloadError with every reason a payload is refused."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Tuple

from gpuops_runbook import catalog, collection, safety

_TICKET = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}")  # always re.fullmatch
#: An inventory host name: no pattern character (``* : ! & , [ ] ~ @``), so it can only ever name that host.
_NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,252}")
#: The same rules, public (gpuops-runbook lookup validates its --ticket and --node with them).
TICKET, NODE = _TICKET, _NODE
#: Extra vars only an operator sets on the command line, never a payload (the playbooks' untrusted_input
#: lets gpuops_targets be a group or pattern only with it).
OPERATOR_ONLY_VARS = frozenset({"gpuops_allow_target_patterns"})
APPROVAL_KEYS = ("by", "at", "ref", "approved")


class PayloadError(ValueError):
    """The payload cannot be run; `errors` lists every reason."""

    def __init__(self, errors: List[str], status: str = "invalid"):
        super().__init__("; ".join(errors))
        self.errors = errors
        self.status = status


#: A payload is small: its extra_vars are at most safety.MAX_DEPTH deep inside the object (8 levels in all) and
#: at most MAX_ITEMS strings of MAX_STRING characters; anything deeper or larger is refused before it is decoded.
MAX_PAYLOAD_DEPTH = 32
MAX_PAYLOAD_BYTES = 1024 * 1024


def parse_payload(text: str) -> Dict[str, Any]:
    """The payload object, decoded within a depth and size budget (the collection's _safejson): a deep or
    oversized document is a PayloadError like invalid JSON, never a RecursionError."""
    try:
        safejson = collection.module("module_utils._safejson")
    except collection.CollectionNotFound:  # the run fails for that anyway; the ticket still gets its result
        safejson = None
    try:
        if safejson is None:
            data = json.loads(text)
        else:
            data = safejson.loads(text, max_depth=MAX_PAYLOAD_DEPTH, max_bytes=MAX_PAYLOAD_BYTES, what="the payload")
    except ValueError as exc:  # JsonBudgetError, JSONDecodeError, UnicodeDecodeError
        raise PayloadError(["payload is not valid JSON: %s" % exc])
    except RecursionError:  # only without the collection's budget
        raise PayloadError(["payload is not valid JSON: nested too deep"])
    if not isinstance(data, dict):
        raise PayloadError(["payload must be a JSON object"])
    return data


def _finding_ref(value: Any) -> Tuple[Optional[str], Optional[str]]:
    """A finding as {check, code} / "check:code" / "check" -> (check, code)."""
    if isinstance(value, dict):
        check, code = value.get("check"), value.get("code")
        return (str(check) if check else None), (None if code is None else str(code))
    if isinstance(value, str) and value:
        check, _, code = value.partition(":")
        return check, (code or None)
    return None, None


def _approval(approval: Any, errors: List[str]) -> Optional[Dict[str, Any]]:
    """The approval object, checked: {by, at, ref, approved} with string by/at/ref and a boolean approved."""
    if approval is None:
        return None
    if not isinstance(approval, dict):
        errors.append("`approval` must be an object {by, at, ref, approved}")
        return None
    extra = sorted(set(approval) - set(APPROVAL_KEYS))
    if extra:
        errors.append("`approval` takes only %s (got %s)" % (", ".join(APPROVAL_KEYS), ", ".join(map(str, extra))))
    for key in ("by", "at", "ref"):
        if approval.get(key) is not None and not isinstance(approval.get(key), str):
            errors.append("`approval.%s` must be a string" % key)
    if "approved" in approval and not isinstance(approval["approved"], bool):
        errors.append("`approval.approved` must be JSON true or false, got %r" % (approval["approved"],))
    return {k: approval[k] for k in APPROVAL_KEYS if k in approval}


# ----------------------------------------------------------------------------------------- the parts of a payload
def _ticket(payload: Dict[str, Any], errors: List[str]) -> Any:
    ticket = payload.get("ticket") if payload.get("ticket") is not None else payload.get("ticket_id")
    if ticket is None or (isinstance(ticket, str) and not ticket.strip()):
        errors.append("missing ticket id (`ticket`)")
    elif isinstance(ticket, bool) or not isinstance(ticket, (str, int)) or not _TICKET.fullmatch(str(ticket)):
        errors.append("ticket id %r: use letters, digits and _.@+- (at most 128)" % (ticket,))
    return ticket


def _by_runbook(data: Dict[str, Any], value: Any, errors: List[str]) -> Optional[Dict[str, Any]]:
    entry = catalog.by_id(data, value) if isinstance(value, str) else None
    if entry is None:
        known = ", ".join(e["id"] for e in catalog.entries(data))
        errors.append("unknown runbook %r (known: %s)" % (value, known))
    return entry


def _by_alert(data: Dict[str, Any], value: Any, errors: List[str]) -> Optional[Dict[str, Any]]:
    name = value.get("labels", {}).get("alertname") if isinstance(value, dict) else value
    entry = catalog.by_alert(data, name) if isinstance(name, str) else None
    if entry is None:
        errors.append("no runbook for alert %r" % (name,))
    return entry


def _by_finding(data: Dict[str, Any], value: Any, errors: List[str]) -> Optional[Dict[str, Any]]:
    check, code = _finding_ref(value)
    entry = catalog.by_finding(data, check or "", code)
    if entry is None:
        reason = (data.get("unmapped") or {}).get(check or "")
        errors.append(
            "no runbook for finding %s%s%s"
            % (check, ":%s" % code if code is not None else "", " (%s)" % reason.strip() if reason else "")
        )
    return entry


#: How a payload names its runbook, in order of precedence.
_LOOKUPS = (("runbook", _by_runbook), ("alert", _by_alert), ("finding", _by_finding))


def _entry(payload: Dict[str, Any], data: Dict[str, Any], errors: List[str]) -> Tuple[Any, Optional[str]]:
    """(catalogue entry or None, how it was named)."""
    for how, lookup in _LOOKUPS:
        if payload.get(how):
            return lookup(data, payload[how], errors), how
    errors.append("name a `runbook`, an `alert` or a `finding`")
    return None, None


def _nodes(nodes: Any, known_hosts: Optional[set], errors: List[str], known_groups: Optional[set] = None) -> List[str]:
    """The payload's nodes: inventory host names, never a group (``all``, ``gpu_nodes``) or a pattern."""
    if isinstance(nodes, str):
        nodes = [n.strip() for n in nodes.split(",") if n.strip()]
    if not isinstance(nodes, list) or not nodes:
        errors.append("`nodes` must be a non-empty list of inventory host names")
        return []
    bad = [n for n in nodes if not isinstance(n, str) or not _NODE.fullmatch(n)]
    groups = sorted(set(n for n in nodes if isinstance(n, str)) & set(known_groups or ()))
    if bad:
        errors.append(
            "bad node names: %s (inventory host names only: no pattern characters * : ! & , [ ] ~ @)"
            % ", ".join(repr(b) for b in bad)
        )
    elif groups:
        errors.append(
            "`nodes` names inventory groups, not hosts: %s; a ticket names the hosts it acts on" % ", ".join(groups)
        )
    elif known_hosts is not None:
        unknown = [n for n in nodes if n not in known_hosts]
        if unknown:
            errors.append("unknown hosts (not in the inventory): %s" % ", ".join(unknown))
    return sorted(set(n for n in nodes if isinstance(n, str)))


def _requester(requester: Any, errors: List[str]) -> Optional[str]:
    if requester is not None and not isinstance(requester, str):
        errors.append("`requester` must be a string")
        return None
    if requester is not None:
        safety.check_data(requester, "requester", errors)
    return requester


def _user_vars(user_vars: Any, entry: Optional[Dict[str, Any]], errors: List[str]) -> Dict[str, Any]:
    """The payload's extra_vars: plain data, and only those the runbook allows."""
    user_vars = user_vars or {}
    if not isinstance(user_vars, dict):
        errors.append("`extra_vars` must be an object")
        return {}
    safety.check_data(user_vars, "extra_vars", errors)
    operator_only = sorted(str(k) for k in user_vars if k in OPERATOR_ONLY_VARS)
    if operator_only:
        errors.append("`extra_vars` may not set %s (an operator's command-line flag)" % ", ".join(operator_only))
        user_vars = {k: v for k, v in user_vars.items() if k not in OPERATOR_ONLY_VARS}
    if entry is not None:
        allowed = set(entry.get("allowed_vars") or [])
        taken = catalog.RESERVED_VARS | set(entry.get("ticket_vars") or {})
        refused = sorted(str(k) for k in user_vars if k not in allowed or k in taken)
        if refused:
            errors.append(
                "runbook %s does not take extra_vars %s (allowed: %s)"
                % (entry["id"], ", ".join(refused), ", ".join(sorted(allowed)) or "none")
            )
    return user_vars


def _confine_paths(user_vars: Dict[str, Any], config: safety.HookConfig, errors: List[str]) -> Dict[str, Any]:
    """Path variables resolved (realpath) and kept under the configured roots."""
    for var, value in sorted(user_vars.items(), key=lambda kv: str(kv[0])):
        roots_key = safety.PATH_VARS.get(var)
        if roots_key is None:
            continue
        real = safety.confine(value, config.roots[roots_key]) if isinstance(value, str) else None
        if real is None:
            errors.append(
                "extra_vars.%s %r is not under the configured %s (%s)"
                % (var, value, roots_key, ", ".join(config.roots[roots_key]) or "none configured")
            )
        else:
            user_vars = dict(user_vars, **{var: real})
    return user_vars


# ------------------------------------------------------------------------------------------ who may ask/approve
def _refuse(msg: str) -> PayloadError:
    return PayloadError([msg], status="refused")


def _authorise(
    entry: Dict[str, Any], requester: Optional[str], approval: Optional[Dict[str, Any]], config: safety.HookConfig
) -> None:
    """Raise PayloadError(status=refused) unless the requester may ask and, where needed, a valid approver
    (not the requester) approved."""
    if not config.may("requester", requester, entry):
        raise _refuse(
            "runbook %s (%s): requester %r may not request it (allowed: %s); nothing was run"
            % (entry["id"], entry["change_class"], requester, config.describe("requester", entry))
        )
    if not entry.get("approval_required"):
        return
    if approval is None or not str(approval.get("by") or "").strip() or approval.get("approved") is not True:
        raise _refuse(
            "runbook %s needs an approval: the payload must carry approval {by, at, ref, approved: true} "
            "(a change/CAB reference); nothing was run" % entry["id"]
        )
    if safety.same_person(approval.get("by"), requester):
        raise _refuse("runbook %s: the requester cannot approve their own request" % entry["id"])
    if not config.may("approver", approval.get("by"), entry):
        raise _refuse(
            "runbook %s (%s): %r may not approve it (allowed: %s); nothing was run"
            % (entry["id"], entry["change_class"], approval.get("by"), config.describe("approver", entry))
        )


def _extravars(
    entry: Dict[str, Any],
    user_vars: Dict[str, Any],
    ticket: str,
    nodes: List[str],
    requester: Optional[str],
    approval: Optional[Dict[str, Any]],
) -> Dict[str, Any]:
    extravars = dict(entry.get("extra_vars") or {})
    extravars.update(user_vars)
    extravars.update(
        {
            "gpuops_ticket": ticket,
            "gpuops_targets": ",".join(nodes),
            "gpuops_nodes": nodes,
            "gpuops_runbook": entry["id"],
            "gpuops_requester": requester or "",
        }
    )
    sources = {"nodes": nodes, "node": nodes[0], "ticket": ticket, "requester": requester or ""}
    for var, src in (entry.get("ticket_vars") or {}).items():
        extravars[var] = sources[src]
    if approval is not None:
        extravars["gpuops_approval"] = approval
        if approval.get("ref") and "gpuops_change_id" not in extravars:
            extravars["gpuops_change_id"] = str(approval["ref"])
    return extravars


def resolve(
    payload: Dict[str, Any],
    data: Dict[str, Any],
    known_hosts: Optional[set],
    config: Optional[safety.HookConfig] = None,
    state_dir: Optional[str] = None,
    known_groups: Optional[set] = None,
) -> Dict[str, Any]:
    """Check a payload against the catalogue, the inventory (its hosts, and its groups, which a ticket may not
    name) and the hook config; return the run request or raise PayloadError. Without a config nobody may
    request anything (fail closed)."""
    config = config if config is not None else safety.HookConfig({})
    errors: List[str] = []
    ticket = _ticket(payload, errors)
    entry, how = _entry(payload, data, errors)
    nodes = _nodes(payload.get("nodes"), known_hosts, errors, known_groups)
    requester = _requester(payload.get("requester"), errors)
    user_vars = _confine_paths(_user_vars(payload.get("extra_vars"), entry, errors), config, errors)
    approval = _approval(payload.get("approval"), errors)
    if entry is not None and "node" in (entry.get("ticket_vars") or {}).values() and len(nodes) > 1:
        errors.append("runbook %s acts on one node at a time; this ticket names %d" % (entry["id"], len(nodes)))
    if errors:
        raise PayloadError(errors)
    _authorise(entry, requester, approval, config)
    return {
        "ticket": str(ticket),
        "entry": entry,
        "matched_by": how,
        "nodes": nodes,
        "extravars": _extravars(entry, user_vars, str(ticket), nodes, requester, approval),
        "requester": requester,
        "approval": approval,
        "check_mode": payload.get("check_mode") is True,
        # for the service ledger (docs/service.md): data, never templated; checked where it is recorded
        "severity": payload.get("severity"),
        "summary": payload.get("summary"),
    }
