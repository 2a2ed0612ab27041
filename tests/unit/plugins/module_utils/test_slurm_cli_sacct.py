# Tests for parsers/slurm_cli/sacct.py (through sched.parse_sacct_text) on the shapes of cluster-formats.md
# section 2. The default fixed-width table is printed here by the rule section 2 quotes from Slurm's
# print_fields_str (each column ``%*.*s`` plus one space, a dashes row, a longer value cut with its last character
# replaced by ``+``): the oracle is that rule, not the parser.
from __future__ import annotations

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import sched as P

#: sacct's default columns (section 2) and their default widths
DEFAULT_COLS = (("JobID", 12), ("JobName", 10), ("Partition", 10), ("Account", 10), ("AllocCPUS", 10),
                ("State", 10), ("ExitCode", 8))  # fmt: skip
# section 2 [SK sacct_efficiency.txt]: sacct -P -n ... --format JobID,User,Account,AllocCPUS,Elapsed,TotalCPU,...
SK_ROWS = """1|alice|hpc_team|4|01:00:00|03:45:00|04:00:00||4G
1.batch|||4|01:00:00|00:12:00|04:00:00|512M|
1.0|||4|00:58:00|03:33:00|03:52:00|3072M|
"""
SK_FORMAT = "JobID,User,Account,AllocCPUS,Elapsed,TotalCPU,CPUTime,MaxRSS,ReqMem"


def _cell(value, width):
    value = str(value)
    if len(value) > width:
        value = value[: width - 1] + "+"
    return "%*s " % (width, value)


def fixed(rows, cols=DEFAULT_COLS):
    """sacct's fixed-width table (section 2's rule)."""
    lines = ["".join(_cell(name, w) for name, w in cols), "".join("-" * w + " " for dummy, w in cols)]
    lines += ["".join(_cell(v, w) for v, (dummy, w) in zip(row, cols)) for row in rows]
    return "\n".join(lines) + "\n"


def by_id(jobs):
    return {j["job_id"]: j for j in jobs}


def test_default_fixed_width_with_cut_values_and_steps():
    """Section 2 [idx-sacct]: ``OUT_OF_ME+`` with ``0:125``, ``<jobid>.bat+``/``.ex+`` steps, ``CANCELLED by 1234``
    cut to ``CANCELLED+``, an array id cut to ``53601970_[0+``."""
    text = fixed(
        [
            ("35021740", "train", "gpu", "physics", 8, "OUT_OF_MEMORY", "0:125"),
            ("35021740.batch", "batch", "", "physics", 8, "OUT_OF_MEMORY", "0:125"),
            ("35021740.extern", "extern", "", "physics", 8, "COMPLETED", "0:0"),
            ("35021741", "train", "gpu", "physics", 8, "CANCELLED by 1234", "0:15"),
            ("53601970_[0-99%4]", "arr", "gpu", "physics", 1, "PENDING", "0:0"),
            ("35021742", "train", "gpu", "physics", 8, "COMPLETED", "0:0"),
        ]
    )
    assert "OUT_OF_ME+" in text and "35021740.ba+" in text and "CANCELLED+" in text and "53601970_[0+" in text
    errors = []
    jobs = by_id(P.parse_sacct_text(text, "sacct.txt", errors))
    assert errors == [] and sorted(jobs) == ["35021740", "35021741", "35021742", "53601970_[0+"]
    oom = jobs["35021740"]
    assert (oom["state"], oom["cause"], oom["exit_code"], oom["signal"]) == ("OUT_OF_MEMORY", "user", 0, 125)
    assert oom["cut"] == ["state"] and [s["state"] for s in oom["steps"]] == ["OUT_OF_MEMORY", "COMPLETED"]
    assert oom["nodes"] is None  # the default columns have no NodeList: unknown, not "no node"
    assert jobs["35021741"]["state"] == "CANCELLED" and jobs["35021741"]["cut"] == ["state"]
    assert jobs["53601970_[0+"]["cut"] == ["job_id"] and jobs["35021742"]["cut"] == []


def test_a_cut_value_is_never_over_read():
    cols = (("JobID", 8), ("State", 5), ("NodeList", 10))
    text = fixed(
        [("7", "REQUEUE_HOLD", "gpu[01-04,07]"), ("8", "NODE_FAIL", "gpu05"), ("9", "FAILED", "gpu[01-02]")], cols
    )
    jobs = by_id(P.parse_sacct_text(text))
    assert jobs["7"]["state"] == "REQU" and jobs["7"]["cause"] is None  # REQUEUED, REQUEUE_FED or _HOLD: not said
    assert jobs["7"]["nodes"] == [] and jobs["7"]["nodes_cut"]  # gpu[01-04+: no node list, never gpu01..gpu04
    assert jobs["8"]["state"] == "NODE_FAIL" and jobs["8"]["cut"] == ["state"] and jobs["8"]["nodes"] == ["gpu05"]
    assert jobs["9"]["state"] == "FAILED" and jobs["9"]["nodes"] == ["gpu01", "gpu02"]
    narrow = fixed([("7", "FAILED", "gpu01")], (("JobID", 8), ("State", 4), ("NodeList", 9)))
    assert "Sta+" in narrow and P.parse_sacct_text(narrow)[0]["state"] == ""  # State or Start? not read
    narrow = fixed([("7", "FAILED", "3:0")], (("JobID", 8), ("State", 10), ("ExitCode", 5)))
    assert "Exit+" in narrow and P.parse_sacct_text(narrow)[0]["exit_code"] == 3  # a cut header: by its prefix
    cut_id = fixed([("123456789", "FAILED", "gpu01")], (("JobID", 6), ("State", 10), ("NodeList", 9)))
    errors = []
    assert P.parse_sacct_text(cut_id, "sacct.txt", errors) == [] and "JobID%20" in errors[0]["message"]


def test_widened_columns_and_node_lists():
    """``-o JobID%20,State%30,NodeList%40``: the widths come from the dashes row."""
    cols = (("JobID", 20), ("State", 30), ("NodeList", 40), ("ExitCode", 8))
    text = fixed(
        [
            ("35021740", "NODE_FAIL", "b22-[01-03]", "0:0"),
            ("35021740.batch", "CANCELLED", "b22-01", "0:15"),
            ("35021741", "FAILED", "b22-02", "3:0"),
            ("35021742", "PENDING", "None assigned", "0:0"),
        ],
        cols,
    )
    jobs = by_id(P.parse_sacct_text(text))
    assert jobs["35021740"]["nodes"] == ["b22-01", "b22-02", "b22-03"] and jobs["35021740"]["cause"] == "node"
    assert jobs["35021740"]["steps"] == [{"step": "batch", "state": "CANCELLED"}] and jobs["35021740"]["cut"] == []
    assert jobs["35021741"]["cause"] == "user" and jobs["35021741"]["exit_code"] == 3
    assert jobs["35021742"]["nodes"] == []  # section 2: pending jobs show NodeList "None assigned"


def test_parsable_with_a_header_names_the_columns():
    """``-P`` (no trailing ``|``) and ``-p`` (a ``|`` after every field), any column set and order."""
    text = "JobID|User|Account|AllocCPUS|Elapsed|TotalCPU|CPUTime|MaxRSS|ReqMem\n" + SK_ROWS
    (job,) = P.parse_sacct_text(text)
    assert job["job_id"] == "1" and job["user"] == "alice" and [s["step"] for s in job["steps"]] == ["batch", "0"]
    p = "State|NodeList|JobID|ExitCode|\nNODE_FAIL|gpu[07-08]|41|0:0|\nFAILED|gpu07|42|1:0|\nRUNNING|gpu09|43|0:0|\n"
    jobs = by_id(P.parse_sacct_text(p))
    assert jobs["41"]["nodes"] == ["gpu07", "gpu08"] and jobs["41"]["cause"] == "node"
    assert jobs["42"]["cause"] == "user" and jobs["43"]["state"] == "RUNNING" and jobs["43"]["cause"] is None


def test_noheader_with_its_declared_format():
    """``-n``: the command line above the rows declares the columns (section 2's exporter capture)."""
    for line in ("$ sacct -P -n -a --format %s\n" % SK_FORMAT, "# sacct -P -n -o '%s'\n" % SK_FORMAT):
        (job,) = P.parse_sacct_text(line + SK_ROWS)
        assert job["user"] == "alice" and len(job["steps"]) == 2
    with pytest.raises(ParseError) as err:  # 9 fields but not the collection's columns: never misread as them
        P.parse_sacct_text(SK_ROWS, "sacct.txt")
    assert "headerless" in str(err.value) and "sacct -p/-P with a header" in str(err.value)


def test_steps_only_give_their_job_the_failing_steps_state():
    text = "JobID|State|NodeList\n5.batch|COMPLETED|n1\n5.0|OUT_OF_MEMORY|n1\n5.extern|COMPLETED|n1\n"
    (job,) = P.parse_sacct_text(text)
    assert job["job_id"] == "5" and job["state"] == "OUT_OF_MEMORY" and job["state_from_steps"]
    assert job["nodes"] == ["n1"]


def test_one_bad_row_costs_that_row():
    text = "JobID|State|NodeList\n1|FAILED|n1\nnot a job|FAILED|n2\n2|FAILED|n[1-\n3|COMPLETED|n3|extra\n4|FAILED|n4\n"
    errors = []
    jobs = P.parse_sacct_text(text, "sacct.txt", errors)
    assert [j["job_id"] for j in jobs] == ["1", "4"]
    assert [e["line"] for e in errors] == [3, 4, 5] and all(e["kind"] == "parse" for e in errors)


def test_empty_window_and_garbage():
    assert P.parse_sacct_text("") == []
    assert P.parse_sacct_text(fixed([])) == []  # a header and dashes, no job in the window
    with pytest.raises(ParseError):
        P.parse_sacct_text("sacct: error: Unknown arguments\n")


def test_the_command_pasted_above_its_output():
    text = fixed([("35021740", "train", "gpu", "physics", 8, "NODE_FAIL", "0:0")])
    for prompt in ("$ sacct -a -S now-1day", "[root@login1 ~]# sacct"):
        (job,) = P.parse_sacct_text(prompt + "\n" + text)
        assert job["state"] == "NODE_FAIL" and job["cause"] == "node"
