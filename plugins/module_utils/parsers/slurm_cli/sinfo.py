# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``sinfo`` in the forms operators capture it (cluster-formats.md section 1), read into one node list.

Accepted (``FORMS``): the default (``PARTITION AVAIL TIMELIMIT NODES STATE NODELIST``, one row per partition and
state with a folded host list), ``-N``, ``-N -l`` (after its date line), ``-R`` and ``-R -l``, ``-l``, the ``-h``
form of each of these built-ins, any ``-o '%...'`` / ``-O 'Field:...'`` output **with its header** (whitespace
aligned or delimited by ``|`` or ``,``: the column names decide meaning; it needs a node list and a state or reason
column), ``--json`` (21.08/22.05 ``nodes`` and 23.02+ ``sinfo`` layouts), and the collection's own
``-N -h -O 'NodeList:|,Partition:|,StateLong:|,Gres:|,GresUsed:|,Reason:'``, and a headerless ``-o``/``-O`` output
whose first line is the command itself (``$ sinfo -h -N -o '%N|%E|%H|%T'``: the format declares the columns).
Any other headerless custom format is refused with an error that names these forms.

``parse(text, source, errors)`` -> ``[{name, partitions, state, flags, state_flags, gpus, gpus_alloc, reason,
reason_user, reason_time}]``, one per node (expanded from host lists; a node in several partitions once).
``state`` is the long state word (states.node_state); ``None`` with ``unavailable: True`` for a node that
``sinfo -R`` lists without a state (down, drained, fail or failing). One bad row costs that row: a ``parse``
entry in ``errors``. Pure; Python 3.8+.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, Records
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.slurm_cli import hostlist, states, table

PARSER = "sinfo"
DOMAIN = "scheduler"
OWN_FORMAT = "NodeList:|,Partition:|,StateLong:|,Gres:|,GresUsed:|,Reason:"
FORMS = (
    "sinfo, sinfo -N, sinfo -N -l, sinfo -R, sinfo -l (each with or without -h), "
    "sinfo -o/-O with its header (a node list and a state or reason column), sinfo -h -o/-O with the command as "
    "the first line, sinfo --json, "
    "sinfo -N -h -O '%s'" % OWN_FORMAT
)
#: column names (sinfo's headers for -o %x and -O Field, and the -O field names themselves) -> meaning
COLUMNS = {
    "NODELIST": "nodes",
    "HOSTNAMES": "nodes",
    "NODEHOST": "nodes",
    "NODE_NAME": "nodes",
    "PARTITION": "partition",
    "STATE": "state",
    "STATELONG": "state",
    "STATECOMPACT": "state",
    "STATECOMPLETE": "state",
    "REASON": "reason",
    "USER": "user",
    "TIMESTAMP": "time",
    "GRES": "gres",
    "GRES_USED": "gres_used",
    "GRESUSED": "gres_used",
    "NODES": "count",
    "AVAIL": "avail",
}
_EMPTY = ("", "none", "(null)", "unknown", "n/a")
_DATE = re.compile(r"^[A-Za-z]{3} [A-Za-z]{3} +\d{1,2} \d\d:\d\d:\d\d \d{4}$")
_AVAIL = ("up", "down", "drain", "inact", "n/a")
_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|Unknown|None)$")
_GPU = re.compile(r"(?:^|[,/:])gpu(?::[A-Za-z0-9_.-]+)?[:=]([0-9]{1,9})(?![0-9])")


def gpus_of(tres: Any) -> int:
    """GPUs in a GRES/TRES string (``gpu:h100:8(S:0-1)``, ``gres/gpu=4``); 0 when none."""
    if not isinstance(tres, str):
        return 0
    return sum(int(m.group(1)) for m in _GPU.finditer(re.sub(r"\([^)]*\)", "", tres)))


def _value(v: Optional[str]) -> Optional[str]:
    v = (v or "").strip()
    return None if v.lower() in _EMPTY else v


class _Nodes:
    def __init__(self) -> None:
        self.by_name: Dict[str, Dict[str, Any]] = {}

    def add(self, row: Dict[str, Optional[str]]) -> None:
        """One row (meaning -> text) for every node of its host list."""
        names = hostlist.expand(row.get("nodes"))
        if not names:
            if (row.get("count") or "").strip() in ("0", ""):
                return  # sinfo's "0 n/a" row of an empty partition/state
            raise ParseError("no node list", PARSER)
        count = (row.get("count") or "").strip()
        if re.match(r"^[0-9]{1,9}$", count) and int(count) != len(names):
            # sinfo cuts a fixed-width column silently: a node list that does not hold NODES names is cut
            raise ParseError(
                "node list %r holds %d names, NODES says %s (cut?)" % (row.get("nodes"), len(names), count), PARSER
            )
        st: Dict[str, Any] = {"state": None, "flags": [], "state_flags": []}
        if row.get("state"):
            try:
                st = states.node_state(row["state"])
            except states.StateError as exc:
                raise ParseError(str(exc), PARSER) from None
        elif not row.get("reason"):
            raise ParseError("neither a state nor a reason", PARSER)
        part = (row.get("partition") or "").strip().rstrip("*")
        for name in names:
            node = self.by_name.get(name)
            if node is None:
                node = self.by_name[name] = {
                    "name": name,
                    "partitions": [],
                    "state": st["state"],
                    "flags": list(st["flags"]),
                    "state_flags": list(st["state_flags"]),
                    "gpus": gpus_of(row.get("gres")),
                    "gpus_alloc": gpus_of(row.get("gres_used")),
                    "reason": _value(row.get("reason")),
                    "reason_user": _value(row.get("user")),
                    "reason_time": _value(row.get("time")),
                }
                if node["state"] is None:
                    node["unavailable"] = True  # listed by sinfo -R: down, drained, fail or failing
            elif node["state"] is None and st["state"] is not None:
                node.update(state=st["state"], flags=list(st["flags"]), state_flags=list(st["state_flags"]))
                node.pop("unavailable", None)
            if node["reason"] is None and _value(row.get("reason")):
                node["reason"] = _value(row.get("reason"))
            if part and part not in node["partitions"]:
                node["partitions"].append(part)


def _meaning(row: Dict[str, str]) -> Dict[str, Optional[str]]:
    out: Dict[str, Optional[str]] = {}
    for col, v in row.items():
        key = COLUMNS.get(col)
        if key and key not in out:
            out[key] = v
    return out


def _header(line: str) -> Optional[Tuple[str, List[str]]]:
    """(delimiter or '', column names) when ``line`` is a sinfo header naming the columns this parser needs."""
    delim = "|" if "|" in line else "," if "," in line and " " not in line.strip() else ""
    cols = [table.norm(c) for c in (line.split(delim) if delim else line.split())]
    keys = {COLUMNS.get(c) for c in cols}
    if "nodes" in keys and ("state" in keys or "reason" in keys):
        return delim, cols
    return None


def _is_state(word: str) -> bool:
    try:
        states.node_state(word)
    except states.StateError:
        return False
    return True


# headerless built-ins (cluster-formats.md 1.1): words -> meaning, or None when the words are not that form
def _h_default(w: List[str]) -> Optional[Dict[str, Optional[str]]]:
    if len(w) in (5, 6) and w[1] in _AVAIL and re.match(r"^[0-9]+$", w[3]) and (_is_state(w[4]) or w[4] == "n/a"):
        return {"partition": w[0], "avail": w[1], "count": w[3], "state": w[4], "nodes": w[5] if len(w) == 6 else ""}
    return None


def _h_nodes(w: List[str]) -> Optional[Dict[str, Optional[str]]]:
    if len(w) == 4 and w[1] == "1" and _is_state(w[3]):  # -N: one node a row
        return {"nodes": w[0], "count": w[1], "partition": w[2], "state": w[3]}
    if len(w) >= 11 and w[1] == "1" and _is_state(w[3]) and re.match(r"^\d+:\d+:\d+$", w[5]):
        return {"nodes": w[0], "count": w[1], "partition": w[2], "state": w[3], "reason": " ".join(w[10:])}
    return None


def _h_reasons(w: List[str], line: str) -> Optional[Dict[str, Optional[str]]]:
    if len(w) >= 4 and _TIME.match(w[-2]):  # -R: %20E %9u %19H %N
        return {"reason": line[:20].strip() or " ".join(w[:-3]), "user": w[-3], "time": w[-2], "nodes": w[-1]}
    if len(w) >= 5 and _TIME.match(w[-3]):  # -R -l: %20E %12U %19H %6t %N
        return {"reason": line[:20].strip(), "user": w[-4], "time": w[-3], "state": w[-2], "nodes": w[-1]}
    return None


def _h_own(line: str) -> Optional[Dict[str, Optional[str]]]:
    f = line.split("|")
    if len(f) < 6 or not f[0].strip():
        return None
    return {"nodes": f[0], "partition": f[1], "state": f[2], "gres": f[3], "gres_used": f[4], "reason": "|".join(f[5:])}


def _headerless(line: str) -> Optional[Dict[str, Optional[str]]]:
    if "|" in line:
        return _h_own(line)
    w = line.split()
    return _h_default(w) or _h_nodes(w) or _h_reasons(w, line)


def refused(what: str, source: Optional[str], line: Optional[int] = None) -> ParseError:
    return ParseError("%s; readable forms: %s" % (what, FORMS), PARSER, source, line)


#: -o %x codes -> the header sinfo prints for them [SL-man]
_CODES = {"N": "NODELIST", "n": "HOSTNAMES", "P": "PARTITION", "R": "PARTITION", "t": "STATE", "T": "STATE",
          "E": "REASON", "H": "TIMESTAMP", "u": "USER", "U": "USER", "D": "NODES", "G": "GRES", "a": "AVAIL"}  # fmt: skip
_FIELD_NAMES = {"NODEHOST": "HOSTNAMES", "PARTITIONNAME": "PARTITION", "STATECOMPACT": "STATE", "USERLONG": "USER"}
_OPTION = re.compile(r"(?:^|\s)(-o|--format|-O|--Format)(?:=|\s+)(?:'([^']*)'|\"([^\"]*)\"|(\S+))")
_SPEC = re.compile(r"%[-.]?[0-9]*([A-Za-z])")


class _Split:
    """A headerless table whose columns a declared format names: split on ``delim`` (``None``: whitespace, the
    reason absorbing extra words) or cut at fixed ``widths``."""

    def __init__(self, cols: List[str], delim: Optional[str], widths: Optional[List[int]] = None) -> None:
        self.cols, self.delim, self.widths = cols, delim, widths

    def row(self, line: str) -> Tuple[Dict[str, str], Any]:
        if self.widths:
            vals, at = [], 0
            for w in self.widths:
                vals.append(line[at : at + w].strip())
                at += w
            return dict(zip(self.cols, vals)), set()
        vals = line.strip().split(self.delim) if self.delim else line.split()
        if len(vals) > len(self.cols) and "REASON" in self.cols:
            i, extra = self.cols.index("REASON"), len(vals) - len(self.cols)
            vals = vals[:i] + [(self.delim or " ").join(vals[i : i + extra + 1])] + vals[i + extra + 1 :]
        if len(vals) != len(self.cols):
            raise ValueError("%d values for the %d declared columns" % (len(vals), len(self.cols)))
        return {c: v.strip() for c, v in zip(self.cols, vals)}, set()


def _declared(line: str) -> Optional[_Split]:
    """The reader a command line ``$ sinfo ... -o '%N|%T'`` / ``-O 'NodeList:|,StateLong:'`` declares, or None."""
    m = _OPTION.search(line) if "sinfo" in line else None
    if not m:
        return None
    spec = next(g for g in m.groups()[1:] if g is not None)
    if m.group(1) in ("-o", "--format"):
        cols = [_CODES.get(c, "?" + c) for c in _SPEC.findall(spec)]
        seps = _SPEC.split(spec)[2:-1:2]  # the literal text between two fields
        delim = seps[0].strip() if seps and len(set(seps)) == 1 and seps[0].strip() else None
        return _Split(cols, delim) if cols else None
    cols: List[str] = []
    widths: List[int] = []
    suffixes = set()
    for field in spec.split(","):
        name, colon, size = field.partition(":")
        name = table.norm(name)
        cols.append(_FIELD_NAMES.get(name, name))
        m2 = re.match(r"^\.?([0-9]*)(.*)$", size)
        widths.append(int(m2.group(1)) if m2 and m2.group(1) else 20)
        suffixes.add(m2.group(2) if colon and m2 else None)
    if suffixes == {None}:
        return _Split(cols, None, widths)  # -O without ':': 20 characters (or the given size) a field, no separator
    suffix = suffixes.pop() if len(suffixes) == 1 else " "
    return _Split(cols, (suffix or " ").strip() or None)


def _reader(lines: List[Tuple[int, str]], source: Optional[str]) -> Tuple[Any, List[Tuple[int, str]]]:
    """(the table reader of the header, the rows), or (None, rows) for a headerless built-in form."""
    table.check_first_line(lines, PARSER, source)
    declared = _declared(lines[0][1])
    if declared is not None:
        keys = {COLUMNS.get(c) for c in declared.cols}
        if "nodes" not in keys or not keys & {"state", "reason"}:
            raise refused(  # pylint: disable=raising-format-tuple
                "the declared sinfo format has no node list (%N, NodeList) or no state or reason (%T, %E)",
                source,
                lines[0][0],
            )
        return declared, lines[1:]
    if table.is_command(lines[0][1], "sinfo"):
        rest = [ln for ln in lines[1:] if not _DATE.match(ln[1].strip())]
        if not rest:
            raise ParseError("no node lines after the command line", PARSER, source)
        return _reader(rest, source)  # the command pasted above its output, declaring nothing
    head = _header(lines[0][1])
    if head is not None:
        delim = head[0]
        reader = table.Delimited(lines[0][1], delim, "REASON") if delim else table.Aligned(lines[0][1], ("REASON",))
        return reader, lines[1:]
    if _headerless(lines[0][1]) is None:
        raise refused(
            "a headerless sinfo format that cannot be decoded (the column names are in the header: capture "
            "without -h, or with the collection's format)",
            source,
            lines[0][0],
        )
    return None, lines


def parse(
    text: str, source: Optional[str] = None, errors: Optional[List[Dict[str, Any]]] = None
) -> List[Dict[str, Any]]:
    """The nodes of any accepted sinfo output (see the module doc). Raises ParseError when nothing can be read."""
    if isinstance(text, str) and text.lstrip().startswith("{"):
        return parse_json(text, source)
    lines = table.text_lines(text, PARSER, source)
    if lines and _DATE.match(lines[0][1].strip()):
        lines = lines[1:]  # -l / -N -l / -i print the date first (strftime "%a %b %d %T %Y")
    if not lines:
        raise ParseError("no node lines", PARSER, source)
    reader, body = _reader(lines, source)
    nodes = _Nodes()
    records = Records(PARSER, source, DOMAIN, errors)
    for n, line in body:
        with records.at(n):
            if records.too_long(line, n):
                continue
            if reader is not None:
                try:
                    row = _meaning(reader.row(line)[0])
                except ValueError as exc:
                    raise ParseError(str(exc), PARSER, source, n) from None
            else:
                row = _headerless(line)
                if row is None:
                    raise ParseError("not a row of this sinfo form: %r" % line[:120], PARSER, source, n)
            nodes.add(row)
    if not nodes.by_name and not records.count:
        if reader is not None:
            return []  # a header only: sinfo -R with no unavailable node
        raise ParseError("no node lines", PARSER, source)
    return records.finish(list(nodes.by_name.values()))


# ---------------------------------------------------------------------------------------------------------------
# --json


def _names(value: Any) -> List[str]:
    if isinstance(value, list):
        out: List[str] = []
        for v in value:
            out += hostlist.expand(str(v))
        return out
    if isinstance(value, str):
        return hostlist.expand(value)
    return []


def parse_json(obj: Any, source: Optional[str] = None) -> List[Dict[str, Any]]:
    """``sinfo --json``: 21.08/22.05 ``{"nodes": [...]}`` (also ``scontrol show node --json``) or 23.02+
    ``{"sinfo": [{"node": {"state": [...]}, "nodes": {"nodes": [...]}, "reason": {...}, "partition": {...}}]}``."""
    if isinstance(obj, (str, bytes)):
        try:
            obj = _safejson.loads(obj, what="sinfo JSON")
        except _safejson.JsonBudgetError as exc:
            raise ParseError(str(exc), PARSER, source) from None
        except ValueError as exc:
            raise ParseError("not JSON (truncated?): %s" % exc, PARSER, source) from None
    nodes = _Nodes()
    if isinstance(obj, dict) and isinstance(obj.get("sinfo"), list):
        for rec in obj["sinfo"]:
            if not isinstance(rec, dict):
                continue
            node = rec.get("node") if isinstance(rec.get("node"), dict) else {}
            hosts = rec.get("nodes") if isinstance(rec.get("nodes"), dict) else {}
            reason = rec.get("reason") if isinstance(rec.get("reason"), dict) else {}
            part = rec.get("partition") if isinstance(rec.get("partition"), dict) else {}
            gres = rec.get("gres") if isinstance(rec.get("gres"), dict) else {}
            for name in _names(hosts.get("nodes")) or _names(hosts.get("hostnames")):
                _json_node(nodes, name, node.get("state"), [], reason.get("description"), part.get("name"), gres)
    elif isinstance(obj, dict) and isinstance(obj.get("nodes"), list):
        for n in obj["nodes"]:
            if isinstance(n, dict) and n.get("name"):
                parts = n.get("partitions") if isinstance(n.get("partitions"), list) else [None]
                gres = {"total": n.get("gres"), "used": n.get("gres_used")}
                for p in parts or [None]:
                    _json_node(nodes, str(n["name"]), n.get("state"), n.get("state_flags"), n.get("reason"), p, gres)
    else:
        raise ParseError("no 'sinfo' or 'nodes' list in the document", PARSER, source)
    return list(nodes.by_name.values())


def _json_node(nodes: _Nodes, name: str, state: Any, flags: Any, reason: Any, part: Any, gres: Dict[str, Any]) -> None:
    words = state if isinstance(state, list) else [state] if state else []
    flags = flags if isinstance(flags, list) else []
    words = [str(w) for w in words] + [str(f) for f in flags if str(f) not in words]
    nodes.add(
        {
            "nodes": name,
            "state": "+".join(words) if words else None,
            "reason": reason if isinstance(reason, str) else None,
            "partition": part if isinstance(part, str) else None,
            "gres": gres.get("total") if isinstance(gres.get("total"), str) else None,
            "gres_used": gres.get("used") if isinstance(gres.get("used"), str) else None,
            "count": "1",
        }
    )
