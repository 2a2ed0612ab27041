# -*- coding: utf-8 -*-
"""Child processes of the shared-state tests (test_state_db.py, test_guard_db.py), started with multiprocessing
"spawn" like separate controllers: a small module so that each child imports only the state interface."""

from __future__ import annotations

import time

from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import guard as _guard
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state_store as _state_store


def guard_cluster(n=8):
    """One partition of ``n`` nodes, all IDLE (a stale view: nobody sees the others' drains), no racks."""
    return {"gpu-node-%02d" % i: {"partitions": ["gpu"], "rack": None, "state": "IDLE"} for i in range(1, n + 1)}


def claim(kw, nodes, run_id, barrier, q):
    store = _state_store.open_state(**kw)
    barrier.wait(60)  # all decide at the same moment, each on the same stale view
    r = store.guard_and_claim(
        nodes, guard_cluster(), policy={"max_share_partition": 0.25}, claim=_guard.Claim(run_id=run_id)
    )
    store.close()
    q.put((run_id, r["allowed"], [x["node"] for x in r["refused_by_guard"]]))


def count(kw, host, rounds, barrier):
    """``rounds`` read-modify-writes of one host's state (boot_id as a counter) through ``update_host``."""
    store = _state_store.open_state(**kw)
    barrier.wait(60)

    def bump(state):
        state["boot_id"] = str(int(state["boot_id"] or 0) + 1)

    for _round in range(rounds):
        store.update_host(host, bump, timeout=60)
    store.close()


class SlowBatch:
    """A batch of host states whose iteration stops half-way: after ``stop_after`` hosts it tells the parent
    (``q``) and sleeps, inside ``save_hosts`` (and its transaction), until the parent kills the process."""

    def __init__(self, hosts, generation, stop_after, q):
        self.hosts, self.generation, self.stop_after, self.q = hosts, generation, stop_after, q

    def items(self):
        for i, host in enumerate(self.hosts):
            if i == self.stop_after:
                self.q.put("mid-batch")
                time.sleep(120)
            yield host, {"boot_id": self.generation, "active_faults": {"x": {"n": i}}}


def save_and_hang(kw, hosts, generation, stop_after, q):
    store = _state_store.open_state(**kw)
    store.save_hosts(SlowBatch(hosts, generation, stop_after, q))
    q.put("finished")  # never reached: killed before


def open_once(kw, barrier, q):
    """Open the state at the same moment as the others (the first open after an upgrade, on several controllers or
    parallel playbooks) and report what this process imported."""
    barrier.wait(60)
    store = _state_store.open_state(**kw)
    q.put(store.imported)
    store.close()
