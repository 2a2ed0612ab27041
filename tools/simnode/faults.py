"""Fault catalogue: named faults applied to a node state so that every tool shows them consistently.

Each fault declares what the health policy should report (the answer key): a list of
{check, component, severity_hint, code} with check ids and component names of docs/findings.md.
`benign` faults are real-world conditions that must NOT raise a P0..P2 finding (P3 advice is allowed).
Counter-growth faults (`needs_previous`) compare two readings: apply() returns the earlier reading as a
second state (`previous`), which the generator writes as a previous capture (docs/simulation.md).
"""

from __future__ import annotations

import random
import re

from simnode import faults_evidence, faults_fleet, faults_gpu, faults_node, faults_optics, faults_xid
from simnode.fault_kit import FAULTS, Fault, fault
from simnode.state import clone

__all__ = ["CATALOGUE_MODULES", "FAULTS", "PREVIOUS_AGE_S", "Fault", "apply", "fault", "previous_of"]

#: The modules whose `@fault` entries make up FAULTS (importing them registers the entries).
CATALOGUE_MODULES = (faults_gpu, faults_node, faults_fleet, faults_xid, faults_evidence, faults_optics)

PREVIOUS_AGE_S = 900  # the previous reading is taken 15 minutes before the current one


# ---------------------------------------------------------------------------------------------- API


def previous_of(state: dict, age: float = PREVIOUS_AGE_S) -> dict:
    """The same node `age` seconds earlier: traffic counters lower, same error counters, older log."""
    prev = clone(state)
    prev["now"] = state["now"] - age
    prev["kernel_log"] = [e for e in prev["kernel_log"] if e["time"] <= prev["now"]]
    for h in prev["hcas"]:
        for p in h["ports"]:
            for k in (
                "port_rcv_data",
                "port_xmit_data",
                "port_rcv_packets",
                "port_xmit_packets",
                "unicast_rcv_packets",
                "unicast_xmit_packets",
            ):
                p["counters"][k] = max(0, p["counters"][k] - int(age) * 1000003)
    prev["faults"] = []
    return prev


def apply(state: dict, name: str, rng: random.Random | None = None, prev: dict | None = None, **params) -> dict:
    """Apply fault `name` to state (in place). Returns {"expect": [...], "previous": prev or None}.

    For a needs_previous fault the earlier reading is `prev` (made with previous_of() when not given),
    taken BEFORE the fault changed the counters.
    """
    f = FAULTS[name]
    rng = rng or random.Random(0)
    if f.needs_previous:
        if prev is None:
            prev = previous_of(state)
        params["prev"] = prev
    expect = f.fn(state, rng, **params)
    for e in expect:
        e["fault"] = name
        m = re.match(r"^gpu(\d+)", e["component"])
        if m and "bus_id" not in e and int(m.group(1)) < len(state["gpus"]):
            # the GPU's identity even where the tools cannot give its index (a lost GPU stops the listing)
            e["bus_id"] = state["gpus"][int(m.group(1))]["bus_id"]
    state.setdefault("faults", []).append(name)
    return {"expect": expect, "previous": prev}
