# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hosts of the ``gpuops.cluster.slurm`` inventory source, from ``scontrol show node`` (docs/inventory-plugin.md).

:func:`load_nodes` reads the text or ``--json`` output through the collection's one parser
(``parsers/slurm.py``) and keeps what the inventory needs; :func:`build` turns those nodes (and Slurm's topology)
into hosts, their variables and their groups. Everything from Slurm is data: a node whose name is not a plain host
name, or a group name that does not sanitise to one, is left out with a warning, never templated. Pure: no Ansible
imports, no I/O.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import slurm as _parse

#: A Slurm NodeName / inventory host name, full match (no spaces, no template characters, no leading dash).
HOST_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
#: A NodeAddr: a host name or an IPv4/IPv6 address.
ADDR_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,252}")
#: An Ansible group name after sanitising, full match.
GROUP_RE = re.compile(r"[a-z_][a-z0-9_]{0,254}")
_NOT_GROUP = re.compile(r"[^a-z0-9_]+")
_COUNT = re.compile(r"[0-9]+[KMGTP]?")
MAX_NODES = 100000


def _csv(value: Any) -> List[str]:
    """Features: ``a,b`` (text and 22.05 JSON) or a list (23.11+ JSON); ``(null)`` is none."""
    items = value if isinstance(value, list) else str(value or "").split(",")
    out = []
    for item in items:
        v = _parse._none(str(item))
        if v and v not in out:
            out.append(v)
    return out


def parse_gres(gres: Optional[str]) -> List[Dict[str, Any]]:
    """``gpu:h100:8(S:0-1),vmem:2G`` -> ``[{name: gpu, type: h100, count: "8"}, {name: vmem, type: None, count: "2G"}]``.
    Commas inside ``(...)`` (``(IDX:0,3)``) do not split."""
    if not gres:
        return []
    text = re.sub(r"\([^)]*\)", "", gres)
    out = []
    for item in text.split(","):
        parts = [p.strip() for p in item.strip().split(":")]
        if not parts or not parts[0]:
            continue
        name, gtype, count = parts[0], None, None
        if len(parts) >= 3:
            gtype, count = parts[1] or None, parts[2] or None
        elif len(parts) == 2:
            if _COUNT.fullmatch(parts[1]):
                count = parts[1]
            else:
                gtype = parts[1] or None
        out.append({"name": name, "type": gtype, "count": count})
    return out


def _record(node: Dict[str, Any], text_form: bool) -> Dict[str, Any]:
    raw = node.get("raw") or {}
    if text_form:
        address, hostname = raw.get("NodeAddr"), raw.get("NodeHostName")
        features, active = raw.get("AvailableFeatures"), raw.get("ActiveFeatures")
    else:
        address, hostname = raw.get("address"), raw.get("hostname")
        features, active = raw.get("features"), raw.get("active_features")
    gres = node.get("gres")
    return {
        "name": node.get("name"),
        "address": _parse._none(address) if isinstance(address, str) else None,
        "hostname": _parse._none(hostname) if isinstance(hostname, str) else None,
        "partitions": list(node.get("partitions") or []),
        "state": node.get("state"),
        "base_state": node.get("base_state"),
        "flags": list(node.get("flags") or []),
        "reason": node.get("reason"),
        "features": _csv(features),
        "active_features": _csv(active),
        "gres": gres,
        "gres_list": parse_gres(gres),
        "gpus": node.get("gres_gpus"),
    }


def load_nodes(text: Any, source: str) -> Tuple[List[Dict[str, Any]], List[str]]:
    """Nodes of ``scontrol show node`` output, text or ``--json``: ``(records, warnings)``. Raises ParseError when
    the text holds no node at all (an error message, an empty or truncated file, JSON without ``nodes``)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str) or not text.strip():
        raise ParseError("empty: no scontrol show node output", _parse.PARSER, source)
    warnings: List[str] = []
    if text.lstrip().startswith("{"):
        try:
            obj = _safejson.loads(text, what=source)
        except ValueError as exc:
            raise ParseError("not valid JSON: %s" % exc, _parse.PARSER, source) from None
        nodes, text_form = _parse.parse_json_nodes(obj, source), False
    else:
        errors: List[Dict[str, Any]] = []
        nodes, text_form = _parse.parse_show_node(text, source, errors), True
        warnings += ["%s: %s" % (source, e.get("message") or e) for e in errors]
    if len(nodes) > MAX_NODES:
        raise ParseError("more than %d nodes" % MAX_NODES, _parse.PARSER, source)
    out = [_record(n, text_form) for n in nodes]
    if not out:
        raise ParseError("no node in the output", _parse.PARSER, source)
    return out, warnings


def group_name(prefix: str, value: str) -> Optional[str]:
    """``prefix + value`` lower-cased with every run of other characters as ``_``; None when that is not a group name."""
    part = _NOT_GROUP.sub("_", str(value).lower()).strip("_")
    if not part:
        return None
    name = _NOT_GROUP.sub("_", prefix.lower()) + part
    if name[0].isdigit():
        name = "_" + name
    return name if GROUP_RE.fullmatch(name or "") else None


def gres_matches(rule: str, gres_list: List[Dict[str, Any]]) -> bool:
    """``gpu`` / ``gpu:h100`` / ``gpu:h100:8`` against a node's GRES (``gpu:8`` for an untyped count)."""
    parts = [p.strip() for p in str(rule).split(":")]
    for g in gres_list:
        if parts[0] != g["name"]:
            continue
        rest = parts[1:]
        if len(rest) == 1 and _COUNT.fullmatch(rest[0]) and g["type"] is None:
            if rest[0] == g["count"]:
                return True
            continue
        if rest and rest[0] != (g["type"] or ""):
            continue
        if len(rest) > 1 and rest[1] != (g["count"] or ""):
            continue
        return True
    return False


def node_class(record: Dict[str, Any], rules: List[Dict[str, Any]]) -> Optional[str]:
    """The first rule whose every given key matches: ``gres`` (a GRES pattern), ``feature`` (one of the node's
    features), ``partition``; its ``class``."""
    for rule in rules or []:
        keys = [k for k in ("gres", "feature", "partition") if rule.get(k) not in (None, "")]
        if not keys:
            continue
        ok = True
        if "gres" in keys:
            ok = ok and gres_matches(rule["gres"], record["gres_list"])
        if "feature" in keys:
            ok = ok and str(rule["feature"]) in record["features"] + record["active_features"]
        if "partition" in keys:
            ok = ok and str(rule["partition"]) in record["partitions"]
        if ok:
            return str(rule.get("class"))
    return None


def _host_vars(rec: Dict[str, Any], host: str, opt: Dict[str, Any], place: Dict[str, str], warnings: List[str]):
    """One host's variables: the Slurm name, ``ansible_host``, class, leaf switch and rack."""
    hv: Dict[str, Any] = {
        "gpuops_slurm_node_name": rec["name"],
        "gpuops_slurm_partitions": rec["partitions"],
        "gpuops_slurm_features": rec["features"],
        "gpuops_slurm_gres": rec.get("gres"),
    }
    addr_from = opt.get("address_from", "address")
    addr = rec.get("address") if addr_from == "address" else rec.get("hostname") if addr_from == "hostname" else None
    if addr and ADDR_RE.fullmatch(addr):
        hv["ansible_host"] = addr
    elif addr:
        warnings.append("%s: NodeAddr %r is not a host name or address; ansible_host not set" % (host, addr[:80]))
    cls = node_class(rec, opt.get("node_classes") or [])
    if cls:
        hv["gpuops_node_class"] = cls
    if place.get("leaf"):
        hv["gpuops_leaf_switch"] = place["leaf"]
    if place.get("block"):
        hv["gpuops_rack"] = place["block"]
    elif place.get("leaf") and opt.get("rack_from_leaf", True):
        hv["gpuops_rack"] = place["leaf"]
    return hv


def _group_keys(rec: Dict[str, Any], hv: Dict[str, Any], opt: Dict[str, Any]) -> List[Tuple[str, str, str]]:
    """``(prefix, value, what)`` of every generated group the host joins."""
    prefix = opt.get("group_prefix", "slurm_")
    keys = [(prefix + "partition_", p, "partition") for p in rec["partitions"]]
    keys += [
        (prefix + "state_", s, "state") for s in ([rec["base_state"]] if rec.get("base_state") else []) + rec["flags"]
    ]
    keys += [(prefix + "feature_", f, "feature") for f in rec["features"]]
    gpu_group = opt.get("gpu_group", "gpu_nodes")
    for g in rec["gres_list"]:
        keys.append((prefix + "gres_", g["name"], "GRES"))
        if g["type"]:
            keys.append((prefix + "gres_", "%s_%s" % (g["name"], g["type"]), "GRES type"))
        if g["name"] == "gpu" and g["count"] != "0" and gpu_group:
            keys.append(("", gpu_group, "GPU"))
    if hv.get("gpuops_node_class"):
        keys.append((prefix + "class_", hv["gpuops_node_class"], "class"))
    return keys


def build(
    records: List[Dict[str, Any]],
    places: Optional[Dict[str, Dict[str, str]]] = None,
    options: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """``{"hosts": {name: vars}, "groups": {group: [host, ...]}, "warnings": [...]}``.

    ``options``: ``hostname_from`` (``name`` = NodeName, ``hostname`` = NodeHostName), ``hostname_suffix``,
    ``address_from`` (``address`` = NodeAddr, ``hostname``, ``none``), ``group_prefix``, ``gpu_group`` (hosts with a
    ``gpu`` GRES; empty: none), ``node_classes`` (rules of :func:`node_class`), ``rack_from_leaf``.
    """
    opt = dict(options or {})
    places = places or {}
    hosts: Dict[str, Dict[str, Any]] = {}
    groups: Dict[str, List[str]] = {}
    warnings: List[str] = []
    for rec in records:
        slurm_name = rec.get("name")
        if not isinstance(slurm_name, str) or not HOST_RE.fullmatch(slurm_name):
            warnings.append("node %r left out: not a plain Slurm node name" % (str(slurm_name)[:80],))
            continue
        base = rec.get("hostname") if opt.get("hostname_from") == "hostname" and rec.get("hostname") else slurm_name
        host = base + (opt.get("hostname_suffix") or "")
        if not HOST_RE.fullmatch(host):
            warnings.append("node %s left out: inventory name %r is not a plain host name" % (slurm_name, host[:80]))
            continue
        if host in hosts:
            warnings.append("node %s left out: inventory name %s is already taken" % (slurm_name, host))
            continue
        hv = hosts[host] = _host_vars(rec, host, opt, places.get(slurm_name, {}), warnings)
        for pfx, value, what in _group_keys(rec, hv, opt):
            group = group_name(pfx, value)
            if group is None:
                warnings.append("%s: no group for %s %r (not a valid group name)" % (host, what, str(value)[:60]))
            elif host not in groups.setdefault(group, []):
                groups[group].append(host)
    return {"hosts": hosts, "groups": groups, "warnings": warnings}
