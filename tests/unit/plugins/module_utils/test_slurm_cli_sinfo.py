# Tests for parsers/slurm_cli/sinfo.py (through sched.parse_sinfo, the collector's entry point) on the captures of
# cluster-formats.md section 1 (quoted verbatim, section cited) and the real files of tests/fixtures/slurm-cli
# (SOURCE.md). Expected values come from those documents: the NODES column sinfo printed, the states they show.
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import sched as P

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "slurm-cli")

# 1.2, "Default, with multiple ranges, n/a rows and a not-responding drained set" (USC CARC slides); the "<- seen
# with --states=idle" note of the document is left out
DEFAULT = """PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
epyc-64      up 2-00:00:00      1   drng b22-21
epyc-64      up 2-00:00:00     30  alloc b22-[01-20,22-30,32]
main*        up 2-00:00:00      5 drain* d17-[40-44]
epyc-64      up 2-00:00:00      0    n/a
"""
# 1.2, "-N -l always starts with a date line" [OHN]
NLONG = """Sun Jul 16 21:28:05 2017
NODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON
b028           1    xeon8*        down    8    2:4:1  23900    32752      1 xeon5570 Node unexpectedly re
"""
# 1.2, the SK exporter's headerless custom formats (slurm-26.05.2, provenance lists the invocations)
SK_HEADERLESS = [
    "na1|none|Unknown|mixed\n",  # sinfo -h -N -o '%N|%E|%H|%T'
    "gpu|10|idle|gpu\n",  # sinfo -h -o '%R|%D|%T|%b'
    "a002 0 876896 0/0/288/288 drained* gpu gpu:model_a:4(S:0-3) gpu:model_a:0(IDX:N/A)\n"
    "a005 425000 876896 144/144/0/288 mixed gpu gpu:model_a:4(S:0-3) gpu:model_a:2(IDX:0,3)\n"
    "c001 730000 771951 192/0/0/192 allocated cpu* (null) (null)\n",  # -h -N -O 'NodeList: ,AllocMem: ,...'
]


def fx(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as fh:
        return fh.read()


def by_name(nodes):
    return {n["name"]: n for n in nodes}


def out_of_service(nodes):
    return sorted(n["name"] for n in nodes if n["state"] not in ("idle", "allocated", "mixed") or "*" in n["flags"])


def test_default_format_expands_host_lists_and_reads_suffixes():
    """1.2 default capture: 1 + 30 + 5 nodes (sinfo's NODES column), the n/a row of 0 nodes is no node."""
    errors = []
    nodes = by_name(P.parse_sinfo(DEFAULT, "sinfo.txt", errors))
    assert errors == [] and len(nodes) == 36
    assert nodes["b22-21"]["state"] == "draining" and nodes["b22-21"]["partitions"] == ["epyc-64"]
    assert [nodes["d17-%d" % i]["state"] for i in range(40, 45)] == ["drained"] * 5
    assert nodes["d17-42"]["flags"] == ["*"] and nodes["d17-42"]["partitions"] == ["main"]  # default partition's * gone
    assert nodes["b22-32"]["state"] == "allocated" and "b22-31" not in nodes and "b22-21" in nodes
    assert out_of_service(nodes.values()) == ["b22-21", "d17-40", "d17-41", "d17-42", "d17-43", "d17-44"]


def test_default_format_without_header():
    """``sinfo -h``: the same rows, no header."""
    body = "".join(DEFAULT.splitlines(True)[1:])
    assert by_name(P.parse_sinfo(body)) == by_name(P.parse_sinfo(DEFAULT))


def test_node_long_format_after_its_date_line():
    """1.2 ``sinfo -N -l``: the date line first, AVAIL_FE cut from AVAIL_FEATURES, the reason cut at 20."""
    (b028,) = P.parse_sinfo(NLONG)
    assert (b028["name"], b028["state"], b028["partitions"]) == ("b028", "down", ["xeon8"])
    assert b028["reason"] == "Node unexpectedly re"
    body = "".join(NLONG.splitlines(True)[2:])  # sinfo -h -N -l: neither date nor header
    assert P.parse_sinfo(body)[0]["reason"] == "Node unexpectedly re"


def _reasons_table(rows):
    """``sinfo -R`` as its built-in format prints it (1.1: ``%20E %9u %19H %N``, left-justified)."""
    lines = ["%-20.20s %-9.9s %-19.19s %s" % ("REASON", "USER", "TIMESTAMP", "NODELIST")]
    lines += ["%-20.20s %-9.9s %-19.19s %s" % r for r in rows]
    return "\n".join(lines) + "\n"


def test_reasons_form():
    """1.2 ``-R``: one row per (reason, user, time) with a folded node list; a reason set by Slurm itself drains
    many GPU nodes; the reason is cut at 20 characters."""
    text = _reasons_table(
        [
            ("gres/gpu count reported lower than configured", "slurm", "2025-03-01T10:00:00", "gpu[004-009]"),
            ("bad fan", "root", "2025-03-01T09:00:00", "gpu001"),
        ]
    )
    nodes = by_name(P.parse_sinfo(text))
    assert sorted(nodes) == ["gpu001", "gpu004", "gpu005", "gpu006", "gpu007", "gpu008", "gpu009"]
    assert nodes["gpu006"]["reason"] == "gres/gpu count repor" and nodes["gpu006"]["reason_user"] == "slurm"
    assert nodes["gpu001"]["unavailable"] and nodes["gpu001"]["state"] is None
    assert by_name(P.parse_sinfo(text.split("\n", 1)[1])) == nodes  # -h -R
    assert P.parse_sinfo(_reasons_table([])) == []  # no unavailable node: the header only


def test_custom_formats_with_a_header_are_read_by_their_column_names():
    """1.2: the SK exporter's ``-O`` fields, captured with their header: the comma in ``(IDX:0,3)`` and
    ``(null)`` (no GRES), the default partition's ``*``, ``drained*``."""
    header = "NODELIST ALLOCMEM MEMORY CPUS(A/I/O/T) STATE PARTITION GRES GRES_USED\n"
    nodes = by_name(P.parse_sinfo(header + SK_HEADERLESS[2]))
    assert (nodes["a002"]["state"], nodes["a002"]["flags"], nodes["a002"]["gpus"]) == ("drained", ["*"], 4)
    assert (nodes["a005"]["gpus"], nodes["a005"]["gpus_alloc"]) == (4, 2)
    assert nodes["c001"]["partitions"] == ["cpu"] and nodes["c001"]["gpus"] == 0
    # columns in another order, delimited by |, with the reason and time of -o '%N|%E|%H|%T'
    text = "NODELIST|REASON|TIMESTAMP|STATE\nna1|none|Unknown|mixed\nna2|Kill task failed|2025-01-01T00:00:00|drain\n"
    nodes = by_name(P.parse_sinfo(text))
    assert nodes["na1"]["reason"] is None and nodes["na1"]["reason_time"] is None  # "none", "Unknown": not set
    assert nodes["na2"]["state"] == "drained" and nodes["na2"]["reason"] == "Kill task failed"


@pytest.mark.parametrize(
    "text", SK_HEADERLESS + [fx("vp-sinfo-mem-headerless.txt"), fx("vp-sinfo-states-headerless.txt")]
)
def test_headerless_custom_formats_are_refused_naming_the_readable_forms(text):
    with pytest.raises(ParseError) as err:
        P.parse_sinfo(text, "sinfo.txt")
    msg = str(err.value)
    assert "headerless" in msg and "sinfo -N -l" in msg and "--json" in msg and "with its header" in msg


def test_the_exporters_state_vocabulary_with_its_header():
    """1.3 [VP sinfo.txt]: ``allocated down down* drained drained* draining fail* idle mixed``, read once the
    ``-o '%N,%T'`` capture carries its header."""
    nodes = by_name(P.parse_sinfo("NODELIST,STATE\n" + fx("vp-sinfo-states-headerless.txt")))
    assert len(nodes) == 9
    assert out_of_service(nodes.values()) == [
        "lxfoo0026", "lxfoo0166", "lxfoo0200", "lxfoo0239", "lxfoo0242", "lxfoo0312"
    ]  # fmt: skip
    assert nodes["lxfoo0166"]["state"] == "fail" and nodes["lxfoo0242"]["flags"] == ["*"]


def test_the_collections_own_format_is_still_read():
    text = "n1|gpu*|down*|gpu:8|gpu:0|Not responding\nn2|gpu*|idle|gpu:8|gpu:0|none\n"
    nodes = by_name(P.parse_sinfo(text))
    assert (
        nodes["n1"]["state"] == "down" and nodes["n1"]["reason"] == "Not responding" and nodes["n2"]["reason"] is None
    )


def test_one_bad_line_costs_that_line():
    lines = DEFAULT.splitlines(True)
    text = "".join(lines[:2]) + "epyc-64      up 2-00:00:00      3  sleep b22-[40-42]\n" + "".join(lines[2:])
    text += "main*        up 2-00:00:00      2  idle x[1-\n"
    errors = []
    nodes = P.parse_sinfo(text, "sinfo.txt", errors)
    assert len(nodes) == 36
    assert [(e["kind"], e["line"]) for e in errors] == [("parse", 3), ("parse", 7)]
    assert "sleep" in errors[0]["message"] and "x[1-" in errors[1]["message"]
    with pytest.raises(ParseError) as err:  # without an errors list: the partial result rides on the error
        P.parse_sinfo(text)
    assert len(err.value.partial) == 36


def test_trailing_spaces_and_duplicate_rows():
    """[VP sinfo_mem.txt]: a trailing space after ``down ``; a node once per partition (duplicate rows)."""
    text = "NODELIST STATE PARTITION\nb001 down  gpu\nb001 down  cpu\nb002 idle gpu\n"
    nodes = by_name(P.parse_sinfo(text))
    assert nodes["b001"]["partitions"] == ["gpu", "cpu"] and nodes["b001"]["state"] == "down"


def test_json_2108_nodes_layout():
    """1.4: 21.08/22.05 ``sinfo --json`` dumps ``nodes`` (one object per node, state a string + state_flags)."""
    doc = {
        "meta": {"plugin": {"type": "openapi/v0.0.37"}, "Slurm": {"version": {"major": 21, "minor": 8, "micro": 5}}},
        "nodes": [
            {"name": "n1", "state": "mixed", "state_flags": ["DRAIN"], "reason": "bad fan", "partitions": ["gpu"]},
            {"name": "n2", "state": "idle", "state_flags": [], "reason": "", "partitions": ["gpu", "debug"]},
        ],
    }
    nodes = by_name(P.parse_sinfo(json.dumps(doc)))
    assert nodes["n1"]["state"] == "draining" and nodes["n1"]["reason"] == "bad fan"
    assert nodes["n2"]["state"] == "idle" and nodes["n2"]["partitions"] == ["gpu", "debug"]


def test_json_2302_sinfo_layout():
    """1.4: 23.02+ top key ``sinfo``: grouped records, ``node.state`` an array, ``nodes.nodes[]``,
    ``reason.description``; 24.11 optional objects ``null``."""
    doc = {
        "meta": {"slurm": {"version": {"major": "24", "minor": "05", "micro": "5"}}},
        "sinfo": [
            {
                "node": {"state": ["IDLE", "DRAIN"]},
                "nodes": {"allocated": 0, "idle": 2, "other": 0, "total": 2, "nodes": ["gpu01", "gpu02"]},
                "reason": {"description": "bad gpu", "time": 0, "user": "root"},
                "partition": {"name": "gpu"},
                "gres": {"total": "gpu:h100:8", "used": "gpu:h100:0"},
            },
            {"node": {"state": ["MIXED"]}, "nodes": {"nodes": ["gpu03"]}, "reason": None, "partition": {"name": "gpu"}},
        ],
    }
    nodes = by_name(P.parse_sinfo(json.dumps(doc)))
    assert (
        nodes["gpu01"]["state"] == "drained" and nodes["gpu02"]["reason"] == "bad gpu" and nodes["gpu01"]["gpus"] == 8
    )
    assert nodes["gpu03"]["state"] == "mixed" and nodes["gpu03"]["reason"] is None
    with pytest.raises(ParseError):
        P.parse_sinfo('{"meta": {}}')
    with pytest.raises(ParseError):
        P.parse_sinfo(json.dumps(doc)[:200])


def test_builtin_formats_printed_by_their_format_strings():
    """1.1: ``-N`` is ``%#N %.6D %#P %6t``, ``-l`` is ``%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %.11i %N``
    (after its date line), ``-R -l`` is ``%20E %12U %19H %6t %N`` (``%.N`` right-justifies, ``%N`` pads left)."""
    n = ["%-8s %6s %-9s %-6s" % row for row in
         [("NODELIST", "NODES", "PARTITION", "STATE"), ("gpu01", "1", "gpu*", "mix"), ("gpu02", "1", "gpu*", "drain*"),
          ("gpu02", "1", "debug", "drain*"), ("gpu03", "1", "gpu*", "idle~")]]  # fmt: skip
    nodes = by_name(P.parse_sinfo("\n".join(n) + "\n"))
    assert nodes["gpu02"]["partitions"] == ["gpu", "debug"] and nodes["gpu02"]["state"] == "drained"
    assert nodes["gpu03"]["flags"] == ["~"] and nodes["gpu01"]["state"] == "mixed"
    assert by_name(P.parse_sinfo("\n".join(n[1:]) + "\n")) == nodes  # -h -N
    fmt = "%-9s %5s %10s %10s %4s %8s %10s %6s %11s %11s %s"
    rows = [("PARTITION", "AVAIL", "TIMELIMIT", "JOB_SIZE", "ROOT", "OVERSUBS", "GROUPS", "NODES", "STATE",
             "RESERVATION", "NODELIST"),
            ("gpu*", "up", "2-00:00:00", "1-infinite", "no", "NO", "all", "2", "draining@", "", "c[023-024]"),
            ("gpu*", "up", "2-00:00:00", "1-infinite", "no", "NO", "all", "3", "allocated", "", "c[001-003]")]  # fmt: skip
    text = "Sun Jul 16 21:28:05 2017\n" + "\n".join(fmt % r for r in rows) + "\n"
    nodes = by_name(P.parse_sinfo(text))
    assert sorted(nodes) == ["c001", "c002", "c003", "c023", "c024"] and nodes["c024"]["state"] == "draining"
    assert nodes["c023"]["flags"] == ["@"]
    fmt = "%-20.20s %-12.12s %-19.19s %-6s %s"
    rows = [("REASON", "USER", "TIMESTAMP", "STATE", "NODELIST"),
            ("Not responding", "slurm(64030)", "2025-05-01T10:00:00", "down*", "c[017-018]"),
            ("Kill task failed", "root(0)", "2025-05-01T11:00:00", "drain", "c005")]  # fmt: skip
    nodes = by_name(P.parse_sinfo("\n".join(fmt % r for r in rows) + "\n"))
    assert nodes["c018"]["state"] == "down" and nodes["c018"]["flags"] == ["*"]
    assert nodes["c005"]["reason"] == "Kill task failed" and nodes["c005"]["reason_user"] == "root(0)"
    assert "unavailable" not in nodes["c005"]  # -R -l carries the state


def test_headerless_custom_formats_with_their_command_line():
    """1.2: the SK captures come with their exact invocations (provenance.txt); given as the first line, the format
    declares the columns: ``-o`` with a delimiter, ``-O 'Field: ,...'`` (variable width, space suffix), and the VP
    capture's ``-o '%N,%T'``."""
    nodes = by_name(P.parse_sinfo("$ sinfo -h -N -o '%N|%E|%H|%T'\n" + SK_HEADERLESS[0]))
    assert nodes["na1"]["state"] == "mixed" and nodes["na1"]["reason"] is None
    cmd = "$ sinfo -h -N -O 'NodeList: ,AllocMem: ,Memory: ,CPUsState: ,StateLong: ,Partition: ,Gres: ,GresUsed:'\n"
    nodes = by_name(P.parse_sinfo(cmd + SK_HEADERLESS[2]))
    assert (nodes["a002"]["state"], nodes["a002"]["flags"], nodes["a005"]["gpus_alloc"]) == ("drained", ["*"], 2)
    assert nodes["c001"]["partitions"] == ["cpu"]
    nodes = by_name(P.parse_sinfo("# sinfo -h -N -o '%N,%T'\n" + fx("vp-sinfo-states-headerless.txt")))
    assert len(nodes) == 9 and nodes["lxfoo0166"]["state"] == "fail"
    fixed = (
        "$ sinfo -h -N -O NodeList,StateLong\n" + "%-20s%-20s\n" % ("b001", "down") + "%-20s%-20s\n" % ("b002", "idle")
    )
    assert by_name(P.parse_sinfo(fixed))["b001"]["state"] == "down"  # -O without ':': 20 characters a field
    with pytest.raises(ParseError, match="no state or reason"):  # [VP sinfo_mem.txt]: memory only, no node health
        P.parse_sinfo("$ sinfo -h -N -O NodeList,AllocMem,Memory,CPUsState\n" + fx("vp-sinfo-mem-headerless.txt"))


@pytest.mark.parametrize("prompt", ["$ sinfo", "[root@login1 ~]# sinfo -a", "/usr/bin/sinfo -N -l", "# sinfo"])
def test_the_command_pasted_above_its_output(prompt):
    """A ticket's paste starts with the prompt and command: that line declares nothing and is skipped."""
    text = DEFAULT if "-N" not in prompt else NLONG
    assert by_name(P.parse_sinfo(prompt + "\n" + text)) == by_name(P.parse_sinfo(text))


def test_a_silently_cut_node_list_is_not_read():
    """1.1: sinfo cuts a value to its field width without a marker; a node list that no longer holds the NODES
    sinfo counted is refused (that row), never read as fewer nodes."""
    text = "PARTITION AVAIL NODES STATE NODELIST\ngpu up 30 alloc b22-[01-20],b22-2\ngpu up 2 down c[1-2]\n"
    errors = []
    nodes = by_name(P.parse_sinfo(text, "sinfo.txt", errors))
    assert (
        sorted(nodes) == ["c1", "c2"] and [e["line"] for e in errors] == [2] and "NODES says 30" in errors[0]["message"]
    )
