# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm_node with ``names`` (module_utils/_slurm_batch.py): a batch of nodes in one call, one entry per node.

The fake controller below behaves as Slurm 22.05 does (scontrol(1), "NODE STATE CODES" and "requeue"; the test
bed's captures in test_slurm.py): ``State=DRAIN`` on an IDLE node shows IDLE+DRAIN, on a node running a job
MIXED+DRAIN until the job ends; ``State=DOWN`` shows DOWN; ``scontrol requeue`` of a batch job that allows it
takes it off the node (PENDING); a job that ends leaves the node. The expected values are written from those
rules, never computed with the code under test.
"""

from __future__ import annotations

import stat

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils._slurm import Scontrol, SlurmError
from ansible_collections.gpuops.cluster.plugins.module_utils._slurm_batch import check_name, pairs, run_batch

GONE = "slurm_load_node error: Unable to contact slurm controller (connect failure)"  # scontrol's own words


class FakeSlurm(Scontrol):
    """Node and job tables with Slurm's state rules; ``die_at`` makes one command (and every later one) fail."""

    def __init__(self, nodes, jobs=(), die_at=None, path="scontrol"):
        super().__init__(path, timeout=5)
        self.nodes = {n: {"base": base, "flags": [], "reason": None} for n, base in nodes.items()}
        self.jobs = [dict(j) for j in jobs]
        self.die_at = die_at
        self.dead = False
        self.clock_now = 0.0
        self.finish_at = {}  # job id -> clock time it ends by itself

    # -- the clock the batch waits on
    def clock(self):
        return self.clock_now

    def sleep(self, seconds):
        self.clock_now += seconds

    def _call(self, argv):
        self.commands.append([self.path] + argv)
        if self.dead or " ".join(argv) == self.die_at:
            self.dead = True
            raise SlurmError("%s %s: %s" % (self.path, " ".join(argv), GONE))

    def _tick(self):
        for job in self.jobs:
            if job["state"] == "RUNNING" and self.finish_at.get(job["job_id"], 1e9) <= self.clock_now:
                job["state"] = "COMPLETED"

    def show_node(self, name):
        self._call(["show", "node", name])
        self._tick()
        if name not in self.nodes:
            raise SlurmError("scontrol show node %s: Node %s not found" % (name, name))
        n = self.nodes[name]
        busy = any(j["state"] == "RUNNING" and name in j["node_list"].split(",") for j in self.jobs)
        base = "MIXED" if busy and n["base"] == "IDLE" else n["base"]
        state = "+".join([base] + n["flags"])
        return {"name": name, "state": state, "base_state": base, "flags": list(n["flags"]), "reason": n["reason"]}

    def show_jobs(self):
        self._call(["show", "job"])
        return [dict(j) for j in self.jobs]

    def update_node(self, name, values):
        self._call(["update", "NodeName=%s" % name] + ["%s=%s" % kv for kv in values.items()])
        n = self.nodes[name]
        if values.get("State") == "DRAIN" and "DRAIN" not in n["flags"]:
            n["flags"].append("DRAIN")
        if values.get("State") == "DOWN":
            n["base"] = "DOWN"
            for j in self.jobs:  # Slurm kills the jobs of a DOWN node
                if name in j["node_list"].split(","):
                    j["state"] = "NODE_FAIL"
        n["reason"] = values.get("Reason", n["reason"])

    def requeue(self, job_id):
        self._call(["requeue", str(job_id)])
        for j in self.jobs:
            if j["job_id"] == job_id:
                j.update(state="PENDING", node_list="")


def job(job_id, nodes, requeue=True, batch=True):
    return {"job_id": job_id, "state": "RUNNING", "node_list": nodes, "requeue": requeue, "batch_flag": batch}


def params(**kw):
    p = {"state": "drained", "reason": "Xid 79 [INC-1]", "reason_prefix": "gpuops:", "force": False, "requeue": False}
    p.update(kw)
    return p


def run(sc, names, check_mode=False, slurm_names=None, **kw):
    return run_batch(sc, pairs(names, slurm_names), params(**kw), check_mode, sleep=sc.sleep, clock=sc.clock)


def by_name(res):
    return {e["name"]: e for e in res["node_results"]}


def test_drain_a_batch_in_one_call_one_entry_per_node():
    sc = FakeSlurm({"n1": "IDLE", "n2": "IDLE"}, [job(7, "n2")])
    res = run(sc, ["n1", "n2"], verify=True)
    assert res["changed"] is True and res["failed"] is False
    e = by_name(res)
    assert e["n1"]["state_before"] == "IDLE" and e["n1"]["slurm_state"] == "IDLE+DRAIN" and e["n1"]["drained"]
    assert e["n2"]["state_before"] == "MIXED" and e["n2"]["slurm_state"] == "MIXED+DRAIN" and e["n2"]["draining"]
    assert e["n1"]["reason"] == "gpuops: Xid 79 [INC-1]"
    assert e["n2"]["verified"]["slurm_state"] == "MIXED+DRAIN" and e["n2"]["verify_error"] is None
    assert [j["job_id"] for j in e["n2"]["jobs"]] == [7]
    # node by node, in the order given: read, drain, read again - then the read-back of each
    assert [c[1:] for c in sc.commands[:5]] == [
        ["show", "node", "n1"],
        ["show", "job"],
        ["update", "NodeName=n1", "State=DRAIN", "Reason=gpuops: Xid 79 [INC-1]"],
        ["show", "node", "n1"],
        ["show", "job"],
    ]
    assert sc.commands[5][1:] == ["show", "node", "n2"]


def test_idempotent_second_call_changes_nothing():
    sc = FakeSlurm({"n1": "IDLE"})
    assert run(sc, ["n1"])["changed"] is True
    before = len(sc.commands)
    res = run(sc, ["n1"], verify=True)
    assert res["changed"] is False and by_name(res)["n1"]["changed"] is False
    assert not [c for c in sc.commands[before:] if c[1] == "update"]


def test_check_mode_plans_and_touches_nothing():
    sc = FakeSlurm({"n1": "IDLE", "n2": "IDLE"}, [job(3, "n1")])
    res = run(sc, ["n1", "n2"], check_mode=True, requeue=True, wait=True, verify=True, requeue_after=5)
    assert res["changed"] is True
    assert {c[1] for c in sc.commands} == {"show"}  # reads only
    e = by_name(res)
    assert e["n1"]["requeued"] == [3] and e["n1"]["slurm_state"] == "MIXED"  # would be; Slurm unchanged
    assert e["n1"]["verified"] is None and sc.clock_now == 0


def test_controller_dies_half_way_first_node_drained_second_failed_with_the_tools_words():
    sc = FakeSlurm({"a": "IDLE", "b": "IDLE"}, die_at="show node b")
    res = run(sc, ["a", "b"], verify=True)
    e = by_name(res)
    assert e["a"]["changed"] and not e["a"]["failed"] and e["a"]["slurm_state"] == "IDLE+DRAIN"
    assert e["b"]["failed"] and GONE in e["b"]["msg"]
    assert GONE in e["a"]["verify_error"]  # nothing confirms a's drain any more
    assert res["failed"] is True and GONE in res["msg"] and res["msg"].startswith("b: ")


def test_requeue_mode_requeues_what_allows_it_and_names_the_others_nodes():
    sc = FakeSlurm({"a": "IDLE", "b": "IDLE"}, [job(1, "a"), job(2, "a,b", requeue=False)])
    res = run(sc, ["a"], requeue=True, verify=True)
    a = by_name(res)["a"]
    assert a["requeued"] == [1]
    assert [(j["job_id"], j["other_nodes"]) for j in a["not_requeueable"]] == [(2, ["b"])]
    assert ["requeue", "1"] in [c[1:] for c in sc.commands] and ["requeue", "2"] not in [c[1:] for c in sc.commands]
    assert a["verified"]["slurm_state"] == "MIXED+DRAIN"  # job 2 still runs there


def test_grace_period_then_requeue_of_what_still_runs():
    sc = FakeSlurm({"a": "IDLE"}, [job(5, "a"), job(6, "a")])
    sc.finish_at[5] = 2.0  # ends within the grace period; 6 does not
    res = run(sc, ["a"], requeue_after=4, verify=True)
    a = by_name(res)["a"]
    assert a["requeued"] == [6] and sc.clock_now >= 4
    assert a["verified"]["slurm_state"] == "IDLE+DRAIN" and a["verified"]["drained"]


def test_grace_period_ends_early_when_the_node_drains():
    sc = FakeSlurm({"a": "IDLE"}, [job(5, "a")])
    sc.finish_at[5] = 1.0
    res = run(sc, ["a"], requeue_after=300)
    assert by_name(res)["a"]["requeued"] == [] and sc.clock_now < 5


def test_wait_fails_only_the_node_still_draining():
    sc = FakeSlurm({"a": "IDLE", "b": "IDLE"}, [job(9, "b")])
    res = run(sc, ["a", "b"], wait=True, wait_timeout=3, verify=True)
    e = by_name(res)
    assert not e["a"]["failed"]
    assert e["b"]["failed"] and e["b"]["msg"] == "node b still MIXED+DRAIN after 3 s"
    assert res["failed"] is True and res["msg"] == "b: node b still MIXED+DRAIN after 3 s"


def test_down_mode_keeps_the_node_drained_too():
    sc = FakeSlurm({"a": "IDLE"})
    res = run(sc, ["a"], state="down", keep_drained=True, verify=True)
    updates = [c[2:] for c in sc.commands if c[1] == "update"]
    assert updates == [
        ["NodeName=a", "State=DOWN", "Reason=gpuops: Xid 79 [INC-1]"],
        ["NodeName=a", "State=DRAIN", "Reason=gpuops: Xid 79 [INC-1]"],
    ]
    assert by_name(res)["a"]["verified"]["slurm_state"] == "DOWN+DRAIN"


def test_slurm_names_map_inventory_names(tmp_path):
    sc = FakeSlurm({"gn07": "IDLE"})
    res = run(sc, ["gpu-node-07"], slurm_names={"gpu-node-07": "gn07"})
    e = res["node_results"][0]
    assert e["name"] == "gpu-node-07" and e["node"] == "gn07" and e["slurm_state"] == "IDLE+DRAIN"
    assert sc.commands[0][1:] == ["show", "node", "gn07"]


def test_unknown_node_fails_its_entry_only():
    sc = FakeSlurm({"a": "IDLE"})
    res = run(sc, ["zz", "a"])
    e = by_name(res)
    assert e["zz"]["failed"] and "not found" in e["zz"]["msg"] and not e["a"]["failed"]


@pytest.mark.parametrize(
    "bad", ["gpu-node-[01-02]", "a,b", "a b", "-x", "a=b", "", "a\nb", "n1;reboot", 7, None, "x" * 254]
)
def test_names_are_full_matches(bad):
    with pytest.raises(ValueError, match="invalid"):
        check_name(bad)
    with pytest.raises(ValueError, match="invalid"):
        pairs([bad])
    with pytest.raises(ValueError, match="invalid"):
        pairs(["ok-1"], {"ok-1": bad if bad else "a b"})


def test_pairs_keeps_order_and_drops_duplicates():
    assert pairs(["b", "a", "b"], {"a": "sa"}) == [("b", "b"), ("a", "sa")]


def test_cancel_unrequeueable_runs_scancel_next_to_scontrol(tmp_path):
    log = tmp_path / "scancel.log"
    scancel = tmp_path / "scancel"
    scancel.write_text(
        '#!/bin/sh\necho "$*" >> %s\n[ "$1" = 4 ] && { echo "scancel: error: Kill job error" >&2; exit 1; }\nexit 0\n'
        % log
    )
    scancel.chmod(scancel.stat().st_mode | stat.S_IXUSR)
    sc = FakeSlurm({"a": "IDLE", "b": "IDLE"}, [job(2, "a,b", requeue=False), job(4, "b", requeue=False)],
                   path=str(tmp_path / "scontrol"))  # fmt: skip
    res = run(sc, ["a", "b"], requeue=True, cancel_unrequeueable=True)
    e = by_name(res)
    assert log.read_text().split() == ["2", "4"]  # job 2 once, though it runs on both nodes
    assert e["a"]["cancelled"] == [2] and not e["a"]["failed"]
    assert e["b"]["failed"] and "scancel 4 failed" in e["b"]["msg"] and "Kill job error" in e["b"]["msg"]
