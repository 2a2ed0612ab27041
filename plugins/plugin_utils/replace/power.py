# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a BMC power request did, node by node (the replace role's ``power`` step, docs/replace.md).

Pure functions, no Ansible imports. The role requests the state (community.general.redfish_command /
ipmi_power) and reads it back (ansible.builtin.uri / ipmi_power in check mode), registering each loop; these
functions turn the four registered loops into ``replace_power_result`` and the message of a power state that is
not confirmed. The action ``gpuops.cluster.power_outcome`` is the glue.

* ``readings(want, nodes, with_bmc, redfish_set, redfish_get, ipmi_set, ipmi_get)`` -> {host: {bmc, state, error}}.
* ``unconfirmed_text(want, result)`` -> ``power off not confirmed: n1 on - BMC: ...; n2 unknown`` ("" if none).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils.change.isolate_outcome import truncate

STATES = ("on", "off")
#: what a node whose BMC gave no answer says when the module has no message either
NO_ANSWER = "BMC did not answer"
_EXTENDED = ", extended message: "


def _results(registered: Any) -> List[Dict[str, Any]]:
    """The per-item results of a registered loop (a skipped or missing loop has none)."""
    res = registered.get("results") if isinstance(registered, dict) else None
    return [r for r in res if isinstance(r, dict)] if isinstance(res, list) else []


def _set_msg(registered: Any, host: str) -> str:
    """The request's own message for ``host`` (its first result with a ``msg``), whitespace folded; "" if none."""
    for r in _results(registered):
        if r.get("item") == host and "msg" in r:
            return re.sub(r"\s+", " ", str(r["msg"]))
    return ""


def redfish_error(raw: str) -> Optional[str]:
    """The BMC's own words first: community.general puts Redfish's @Message.ExtendedInfo after the URL
    (``..., extended message: '<words>'``); that reads ``<words> (<the rest>)``. Other text is cut to 300
    characters; "" is None."""
    if _EXTENDED in raw:
        words = re.sub(r"^.*, extended message: '(.*)'.*$", r"\1", raw)
        text = "%s (%s)" % (words, re.sub(r", extended message: '.*'", "", raw))
    else:
        text = truncate(raw, 300)
    return text or None


def _no_answer(item: Dict[str, Any]) -> str:
    msg = item.get("msg")
    return truncate(str(NO_ANSWER if msg is None else msg), 200)


def _power_state(item: Dict[str, Any]) -> str:
    js = item.get("json")
    state = js.get("PowerState") if isinstance(js, dict) else None
    return "" if state is None else str(state).lower()


def readings(
    want: str,
    nodes: List[str],
    with_bmc: List[str],
    redfish_set: Any,
    redfish_get: Any,
    ipmi_set: Any,
    ipmi_get: Any,
) -> Dict[str, Dict[str, Any]]:
    """``{host: {bmc, state, error}}``: Redfish readings, then IPMI readings, then the ``nodes`` not in ``with_bmc``
    (the nodes sent to either protocol) as without a BMC.

    Redfish: an HTTP 200 read-back gives the state (lower case); the error is None when it is the wanted one, else
    the request's own message (``redfish_error``). IPMI: the check-mode read-back is ``changed`` while the node is
    not there yet (then it is in the other state, with the request's message cut to 300 characters). A read-back
    without an answer has state None and the module's message (cut to 200), or "BMC did not answer"."""
    if want not in STATES:
        raise ValueError("want must be one of %s, not %r" % (", ".join(STATES), want))
    result: Dict[str, Dict[str, Any]] = {}
    for item in _results(redfish_get):
        host = item.get("item")
        if item.get("status", -1) == 200:
            state: Optional[str] = _power_state(item)
            error = None if state == want else redfish_error(_set_msg(redfish_set, host))
        else:
            state, error = None, _no_answer(item)
        result[host] = {"bmc": True, "state": state, "error": error}
    for item in _results(ipmi_get):
        host = item.get("item")
        if "powerstate" in item:
            moving = bool(item.get("changed", False))
            state = ("on" if want == "off" else "off") if moving else want
            error = (truncate(_set_msg(ipmi_set, host), 300) or None) if moving else None
        else:
            state, error = None, _no_answer(item)
        result[host] = {"bmc": True, "state": state, "error": error}
    for host in nodes:
        if host not in with_bmc and host not in result:
            result[host] = {"bmc": False, "state": None, "error": "no BMC configured"}
    return result


def unconfirmed(want: str, result: Dict[str, Dict[str, Any]]) -> List[str]:
    """The nodes whose read-back state is not the wanted one, in the result's order."""
    return [h for h, r in result.items() if r.get("state") != want]


def unconfirmed_text(want: str, result: Dict[str, Dict[str, Any]]) -> str:
    """``power <want> not confirmed: <node> <state or unknown>[ - BMC: <error>]; ...``, "" when all are confirmed."""
    parts = []
    for host in unconfirmed(want, result):
        r = result[host]
        error = r.get("error")
        parts.append("%s %s%s" % (host, r.get("state") or "unknown", (" - BMC: %s" % error) if error else ""))
    return ("power %s not confirmed: %s" % (want, "; ".join(parts))) if parts else ""
