"""Zero-profile mode of the simulated cluster (`generate.py --no-profiles`): what must still be found.

Without hardware profiles the collection infers expectations from peers (docs/policy.md, zero-config
baseline): the ports of one adapter model within a node, the GPUs of a node, and the majority of the nodes of
one GPU model. This table says, from what each fault does to a node (not from the collection's code), how its
expected findings change when no profile exists: `None` = nothing can know it (only a profile states it), a
list = what a peer comparison reports instead. Faults not listed are found the same way with or without one.
"""

from __future__ import annotations

GROUP_VARS = (
    "---\n"
    "# Zero-profile mode (generate.py --no-profiles): no hardware profiles and no node classes. The inspection\n"
    "# infers each class's baseline from the nodes themselves (docs/policy.md).\n"
    "gpuops_profiles: {}\n"
)


def _exp(check, component, severity, code=None):
    return {"check": check, "component": component, "severity_hint": severity, "code": code}


#: fault -> (replacement expectations or None, why)
NO_PROFILE = {
    # the node runs another driver than every other node of its GPU model: version skew against the majority
    "driver_drift": ([_exp("gpu.drift", "node", "P3", "fleet_driver_version")], "no profile driver_version"),
}


def expect(name: str, expected: list) -> list:
    """The expectations of fault `name` in zero-profile mode."""
    if name not in NO_PROFILE:
        return list(expected)
    replacement, _why = NO_PROFILE[name]
    return [] if replacement is None else [dict(e) for e in replacement]
