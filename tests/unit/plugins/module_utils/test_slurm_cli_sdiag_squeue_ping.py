# Tests for the sdiag, squeue and scontrol ping forms of cluster-formats.md sections 3 and 4 (parsers/sched.py and
# parsers/slurm_cli/squeue.py). Captures are quoted from the document (section cited); the 2017 sdiag is the real
# exporter file in tests/fixtures/slurm-cli (SOURCE.md).
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import sched as P

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "slurm-cli")

# section 3, the 26.05.2 layout [SK slurm-26.05.2/scheduler.txt] with its placeholders filled in
SDIAG_2605 = """*******************************************************
sdiag output at Tue Aug 19 10:00:00 2026 (1787133600)
Data since      Tue Aug 19 00:00:00 2026 (1787097600)
*******************************************************
Server thread count:  1
RPC queue enabled:    0
Agent queue size:     0
Agent count:          0
Agent thread count:   0
DBD Agent queue size: 0

Jobs submitted: 14
Main schedule statistics (microseconds):
\tLast cycle:   3634
Backfilling stats
\tLast cycle when: N/A
Remote Procedure Call statistics by message type
\tREQUEST_NODE_INFO                  ( 2007) count:14     ave_time:300    total_time:4200
Remote Procedure Call statistics by user
\troot            (     0) count:14    ave_time:300    total_time:4200
Pending RPC statistics
\tNo pending RPCs
"""


def fx(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as fh:
        return fh.read()


# ----------------------------------------------------------------------------------- 3 sdiag


def test_sdiag_2605_layout():
    sd = P.parse_sdiag(SDIAG_2605)
    assert (sd["server_thread_count"], sd["agent_count"], sd["dbd_agent_queue_size"], sd["jobs_submitted"]) == (
        1,
        0,
        0,
        14,
    )
    assert sd["main"]["last_cycle"] == 3634 and not sd["truncated"]
    assert sd["rpc_types"] == [
        {"name": "REQUEST_NODE_INFO", "id": 2007, "count": 14, "ave_time": 300, "total_time": 4200}
    ]
    assert sd["rpc_users"][0]["name"] == "root"


def test_sdiag_2017_capture_without_epochs_or_rpc_tables():
    """Section 3: a 2017 capture has no ``(epoch)`` after the dates [VP sdiag.txt]; ``Last cycle when: Wed Apr 12
    11:03:21 2017`` holds colons (split on the first only) and must not be read as the backfill's last cycle."""
    sd = P.parse_sdiag(fx("vp-2017-sdiag.txt"))
    assert (sd["server_thread_count"], sd["agent_queue_size"], sd["jobs_submitted"], sd["jobs_failed"]) == (
        3,
        0,
        9706,
        0,
    )
    assert sd["main"]["mean_cycle"] == 74593 and sd["main"]["last_queue_length"] == 57011
    assert sd["backfill"]["backfilled_jobs"] == 111544 and sd["backfill"]["last_cycle"] == 1942890
    assert sd["backfill"]["mean_depth"] == 29324
    assert "dbd_agent_queue_size" not in sd and sd["rpc_types"] == [] and sd["truncated"]  # 17.x: no such lines


def test_sdiag_backfill_warning_title_and_rpc_queue_columns():
    """Section 3: ``Backfilling stats (WARNING: ...)`` replaces the title while backfill runs; with ``RPC queue
    enabled: 1`` each RPC line grows ``queued: cycle_last: cycle_max: dropped:``."""
    text = SDIAG_2605.replace("Backfilling stats\n", "Backfilling stats (WARNING: data obtained in the middle of "
                              "backfilling execution.)\n\tTotal backfilled jobs (since last slurm start): 7\n")  # fmt: skip
    text = text.replace("RPC queue enabled:    0", "RPC queue enabled:    1")
    text = text.replace(
        "total_time:4200\nRemote", "total_time:4200 queued:0 cycle_last:0 cycle_max:0 dropped:0\nRemote"
    )
    sd = P.parse_sdiag(text)
    assert sd["backfill"]["backfilled_jobs"] == 7 and sd["rpc_types"][0]["count"] == 14


def test_sdiag_cut_at_80_columns_and_ctld_down():
    """Section 3: lines cut to 80 characters without ``--no-trunc`` leave the RPC table partial; slurmctld down
    prints ``No data available. Probably slurmctld is not working`` (an error, not a reading)."""
    cut = "\n".join(line[:60] for line in SDIAG_2605.splitlines()) + "\n"
    sd = P.parse_sdiag(cut)
    assert sd["truncated"] and sd["server_thread_count"] == 1
    with pytest.raises(ParseError):
        P.parse_sdiag("No data available. Probably slurmctld is not working\n")


def test_sdiag_json_2302_plain_and_2405_objects():
    """Section 3 [RV sdiag.json vs sdiag_2405.json]: 23.02 plain ints, 24.05 ``{set, infinite, number}``."""
    plain = {"meta": {"Slurm": {"version": {"major": 23}}}, "statistics": {
        "server_thread_count": 3, "agent_queue_size": 0, "dbd_agent_queue_size": 12, "jobs_submitted": 5,
        "rpcs_by_message_type": [{"message_type": "REQUEST_PING", "type_id": 1008, "count": 9, "average_time": 40,
                                  "total_time": 360}],
        "rpcs_by_user": [{"user": "root", "user_id": 0, "count": 9, "average_time": 40, "total_time": 360}]}}  # fmt: skip
    boxed = json.loads(json.dumps(plain))
    st = boxed["statistics"]
    st["rpcs_by_message_type"][0]["average_time"] = {"set": True, "infinite": False, "number": 40}
    st["dbd_agent_queue_size"] = {"set": True, "infinite": False, "number": 12}
    for doc in (plain, boxed):
        sd = P.parse_sdiag(json.dumps(doc))
        assert (sd["server_thread_count"], sd["dbd_agent_queue_size"]) == (3, 12)
        assert sd["rpc_types"][0] == {"name": "REQUEST_PING", "id": 1008, "count": 9, "ave_time": 40, "total_time": 360}
        assert sd["rpc_users"][0]["name"] == "root"
    with pytest.raises(ParseError):
        P.parse_sdiag('{"statistics": {}}')


# ----------------------------------------------------------------------------------- 4 scontrol ping


def test_ping_forms_of_every_version():
    """Section 4: <=17.11 one line; >=18.08 one line per controller (``backupN`` beyond two); the root-only
    banner; ``--json`` with ``pinged`` (deprecated 24.11) or only ``responding``."""
    old = P.parse_ping("Slurmctld(primary/backup) at ctl1/(NULL) are UP/DOWN\n")
    assert [(c["role"], c["host"], c["state"]) for c in old] == [
        ("primary", "ctl1", "UP"),
        ("backup", "(NULL)", "DOWN"),
    ]
    text = ("Slurmctld(primary) at ctl1 is UP\nSlurmctld(backup1) at ctl2 is DOWN\nSlurmctld(backup2) at ctl3 is UP\n"
            "*****************************************\n** RESTORE SLURMCTLD DAEMON TO SERVICE **\n"
            "*****************************************\n")  # fmt: skip
    assert [(c["role"], c["state"]) for c in P.parse_ping(text)] == [("primary", "UP"), ("backup1", "DOWN"), ("backup2", "UP")]  # fmt: skip
    doc = {"pings": [{"hostname": "ctl1", "pinged": "UP", "responding": True, "latency": 120, "mode": "primary"},
                     {"hostname": "ctl2", "pinged": "DOWN", "responding": False, "latency": 0, "mode": "backup"}]}  # fmt: skip
    assert [(c["role"], c["host"], c["state"]) for c in P.parse_ping(json.dumps(doc))] == [
        ("primary", "ctl1", "UP"), ("backup", "ctl2", "DOWN")]  # fmt: skip
    new = {"pings": [{"hostname": "ctl1", "responding": False, "latency": 0, "primary": True, "status": "DOWN"}]}
    assert P.parse_ping(json.dumps(new)) == [{"role": "primary", "host": "ctl1", "state": "DOWN"}]
    with pytest.raises(ParseError):
        P.parse_ping('{"pings": []}')


# ----------------------------------------------------------------------------------- 4 squeue

SQUEUE_DEFAULT = """  JOBID PARTITION NAME USER ST  TIME  NODES NODELIST(REASON)
  12345     debug job1 dave  R   0:21     4 dev[9-12]
  12346     debug job2 dave PD   0:00     8 (Resources)
"""


def test_squeue_default_form():
    """Section 4's capture: a node list for the running job, a parenthesised reason for the pending one."""
    run, pend = P.parse_squeue_text(SQUEUE_DEFAULT)
    assert (run["job_id"], run["state"], run["nodes"], run["node_count"]) == ("12345", "RUNNING", ["dev9", "dev10", "dev11", "dev12"], 4)  # fmt: skip
    assert (pend["state"], pend["reason"], pend["nodes"], pend["node_count"]) == ("PENDING", "Resources", [], 8)


def test_squeue_reasons_with_commas_and_spaces():
    """Section 4 [RV squeue_fallback.txt, SK]: reasons hold commas, spaces and node lists."""
    text = SQUEUE_DEFAULT + (
        "  12347       gpu job3  eve PD   0:00     2 (ReqNodeNotAvail, UnavailableNodes:cs[100,101,102])\n"
        "  12348       gpu job4  eve PD   0:00     1 (Nodes required for job are DOWN, DRAINED or reserved for jobs "
        "in higher priority partitions)\n"
    )
    jobs = {j["job_id"]: j for j in P.parse_squeue_text(text)}
    assert jobs["12347"]["reason"] == "ReqNodeNotAvail, UnavailableNodes:cs[100,101,102]"
    assert (
        jobs["12348"]["reason"].startswith("Nodes required for job are DOWN, DRAINED") and jobs["12348"]["nodes"] == []
    )


def test_squeue_long_form_after_its_date_line():
    """``squeue -l``: ``%.8T`` (STATE spelled out) and ``%.9l`` (TIME_LIMI), after a date line."""
    text = ("Tue Aug 19 10:00:00 2026\n"
            "  JOBID PARTITION     NAME     USER    STATE       TIME TIME_LIMI  NODES NODELIST(REASON)\n"
            "  12345     debug     job1     dave  RUNNING       0:21   1:00:00      4 dev[9-12]\n"
            "  12349     debug     job5     dave COMPLETI       0:21   1:00:00      1 dev13\n")  # fmt: skip
    jobs = P.parse_squeue_text(text)
    assert [(j["job_id"], j["state"]) for j in jobs] == [("12345", "RUNNING")]  # COMPLETI(NG): not pending/running


def test_squeue_custom_header_and_own_format():
    text = "JOBID|STATE|PARTITION|REASON|NODELIST|SUBMIT_TIME\n7|PENDING|gpu*|Priority||2026-08-19T09:00:00\n"
    (job,) = P.parse_squeue_text(text)
    assert (job["partition"], job["reason"], job["nodes"]) == ("gpu", "Priority", []) and job["submit"]
    with pytest.raises(ParseError) as err:
        P.parse_squeue_text("12345 R dev9\n")
    assert "headerless" in str(err.value) and "squeue -l" in str(err.value)


def test_squeue_one_bad_row_costs_that_row():
    errors = []
    text = SQUEUE_DEFAULT + "  abc     debug job9 dave  R   0:21     4 dev[9-12]\n"
    jobs = P.parse_squeue_text(text, "squeue.txt", errors)
    assert len(jobs) == 2 and [e["line"] for e in errors] == [4]


def test_numbers_no_tool_prints_are_skipped_not_raised():
    """A 5000-digit counter (Python refuses int() of it) or a line over the record limit: skipped, never an
    exception other than ParseError (issue 12's contract)."""
    text = SDIAG_2605.replace("Agent count:          0", "Agent count:          " + "9" * 5000)
    text += "\tREQUEST_PING (1008) count:" + "9" * 5000 + " ave_time:1 total_time:1\n" + "x " * 5000 + "\n"
    sd = P.parse_sdiag(text)
    assert "agent_count" not in sd and sd["server_thread_count"] == 1 and sd["truncated"]


def test_squeue_with_the_command_pasted_above():
    assert len(P.parse_squeue_text("$ squeue -a\n" + SQUEUE_DEFAULT)) == 2
