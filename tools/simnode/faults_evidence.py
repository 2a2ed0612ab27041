"""Faults of the evidence itself (issue 20): captures as operators attach them to tickets.

- `stale_capture`: a capture taken a month ago, without capture.json (Xid 79, a PSU failure in the SEL and a
  flapping IB link, with its previous reading): judged at its evidence time, everything is still found.
- `partial_capture`: only `nvidia-smi nvlink -s/-e`, the kernel log and `scontrol show node` (whose NodeName is
  Slurm's short name, not the host's), one NVLink down: GPU records come from the NVLink headers.
- `xid45_chain`: `Xid 45 ... caused by previous Xid 119` lines whose Xid 119 line is not in the log.
- `kill_task_drain`: Slurm drained the node with `Kill task failed` (unkillable process).
"""

from __future__ import annotations

import time

from simnode.fault_kit import FAULTS, _exp, _log, _pick_gpu, _pick_hca, _xid, fault

#: how old the stale capture is (seconds)
STALE_AGE_S = 30 * 86400
#: the files of the partial capture
PARTIAL_FILES = ("nvidia-smi-nvlink-s.txt", "nvidia-smi-nvlink-e.txt", "kernel.log", "scontrol-show-node.txt")


def _shift(state: dict, age: float) -> None:
    """Every time of the state `age` seconds earlier (the node as it was when the capture was taken)."""
    state["now"] -= age
    state["boot_time"] -= age
    for e in state["kernel_log"]:
        e["time"] -= age
    for e in state["bmc"]["sel"]:
        if e.get("time") is not None:
            e["time"] -= age
    state["capture_meta"] = False  # an attachment: the files without capture.json


@fault(
    "stale_capture",
    "A month-old capture without capture.json: Xid 79, PSU failure in the SEL, a flapping IB link (two readings)",
    needs_previous=True,
)
def _stale_capture(state, rng, prev=None):
    expect = FAULTS["xid79"].fn(state, rng)
    expect += FAULTS["psu_failure"].fn(state, rng)
    hca = _pick_hca(state, rng)
    expect += FAULTS["ib_flap"].fn(state, rng, hca=hca["name"], prev=prev)
    for ago in (300.0, 299.0, 120.0, 119.0):
        _log(state, "mlx5_core %s: Link %s" % (hca["pci"], "down" if ago in (300.0, 120.0) else "up"), ago)
    _shift(state, STALE_AGE_S)
    if prev is not None:
        _shift(prev, STALE_AGE_S)
    return expect


@fault("partial_capture", "Only nvlink -s/-e, kernel.log and scontrol show node (Slurm's short NodeName); a link down")
def _partial_capture(state, rng, gpu=None, link=None):
    g = _pick_gpu(state, rng, gpu)
    n = int(link) if link is not None else rng.randrange(len(g["nvlinks"]))
    g["nvlinks"][n]["up"] = False
    state["capture_files"] = list(PARTIAL_FILES)
    state["slurm"]["node_name"] = "n" + state["hostname"].rsplit("-", 1)[-1]
    return [_exp("gpu.nvlink", "gpu%d/nvlink%d" % (g["index"], n), "P1", "down")]


@fault("xid45_chain", "Xid 45 'caused by previous Xid 119' on one GPU; the Xid 119 line itself is not in the log")
def _xid45_chain(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    for ch, ago in ((1, 610.0), (2, 609.5), (3, 609.0)):
        _xid(state, g, 45, "Ch %08x caused by previous Xid 119" % ch, pid="41%03d" % ch, name="python3", ago=ago)
    return [_exp("gpu.xid", "gpu%d" % g["index"], "P1", "119")]


@fault("kill_task_drain", "Slurm drained the node: 'Kill task failed' (an unkillable process)")
def _kill_task_drain(state, rng):
    state["slurm"].update(
        {
            "state": "IDLE+DRAIN",
            "reason": "Kill task failed",
            "reason_user": "root",
            "reason_time": _iso(state["now"] - 1800),
        }
    )
    return [_exp("scheduler.node_state", "slurm", "P3", "DRAIN")]


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch))
