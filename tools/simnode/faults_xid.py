"""Faults of NVIDIA's Xid catalog alignment (issue 20): Xid 74 register decode, NVLink5 IGNORE sub-cases,
Xid 13 on one GPC/TPC, the SRAM threshold flag, T.Limit margins and NVLink replay/recovery deltas.

Kernel lines use the drivers' real formats: Xid 74 with its seven registers as in NVIDIA/NVSentinel design 022
(`NVLink: fatal error detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)`), Xid 144 as in
leptonai/gpud PR 1160 (`SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 ...)`), Xid 13 as in the gpud
sample `Graphics SM Warp Exception on (GPC 1, TPC 2, SM 0)`.
"""

from __future__ import annotations

from simnode.fault_kit import _exp, _load, _pick_gpu, _xid, fault


def _regs(*values) -> str:
    return ", ".join("0x%x" % v for v in values)


def _other(state, g):
    return next(o for o in state["gpus"] if o is not g and not o.get("lost"))


@fault(
    "xid74_sympathetic",
    "Xid 74 with a link-hardware bit on one GPU and sympathetic Xid 74s (first register bit 1) on its peer",
)
def _xid74_sympathetic(state, rng, gpu=None, link=None):
    g = _pick_gpu(state, rng, gpu)
    peer = _other(state, g)
    lk = int(link) if link is not None else rng.randrange(0, 18)
    _xid(state, g, 74, "NVLink: fatal error detected on link %d(%s)" % (lk, _regs(1 << 8, 0, 0, 0, 0, 0, 0)))
    _xid(
        state,
        peer,
        74,
        "NVLink: fatal error detected on link %d(%s)" % (lk, _regs(1 << 1, 0, 0, 0, 0, 0, 0)),
        ago=599.9,
    )
    # the failing link: P1 reset_gpu (NVIDIA: a reset clears it; reseat only for a field resolution); the peer: P3
    return [_exp("gpu.xid", "gpu%d" % g["index"], "P1", "74"), _exp("gpu.xid", "gpu%d" % peer["index"], "P3", "74")]


@fault(
    "xid74_benign",
    "Xid 74 whose only bits are ignorable / an ECC threshold crossing (fifth register bit 20): no uncorrectable error",
    benign=True,
)
def _xid74_benign(state, rng, gpu=None, link=None):
    g = _pick_gpu(state, rng, gpu)
    lk = int(link) if link is not None else rng.randrange(0, 18)
    _xid(state, g, 74, "NVLink: fatal error detected on link %d(%s)" % (lk, _regs(1 << 0, 0, 0, 0, 1 << 20, 0, 0)))
    return []  # benign: no P0-P2 (gpu.xid P3 none: "continue operation")


@fault("xid74_link_hw", "Xid 74 with a link-hardware bit (first register bit 16), the links stay up")
def _xid74_link_hw(state, rng, gpu=None, link=None):
    g = _pick_gpu(state, rng, gpu)
    lk = int(link) if link is not None else rng.randrange(0, 18)
    _xid(state, g, 74, "NVLink: fatal error detected on link %d(%s)" % (lk, _regs(1 << 16, 0, 0, 0, 0, 0, 0)))
    return [_exp("gpu.xid", "gpu%d" % g["index"], "P1", "74")]


@fault("xid144_ignore", "NVLink5 Xid 144 SAW_MVB Nonfatal (decode sheet: IGNORE)", benign=True)
def _xid144(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    state["kernel_log"].append(
        {
            "time": state["now"] - 600,
            "msg": "NVRM: Xid (PCI:%s): 144, SAW_MVB Nonfatal XC0 i0 Link 0 "
            "(0x00000001 0x00000008 0x00000000 0x00000000 0x00000000 0x00000000)" % g["bus_id"][4:-2].lower(),
        }
    )
    return []  # benign: no P0-P2 (gpu.xid P3 monitor)


@fault("xid13_same_tpc", "Xid 13 on the same GPC/TPC from two different processes (NVIDIA WORKFLOW_XID_13)")
def _xid13_same_tpc(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    text = "Graphics SM Warp Exception on (GPC 3, TPC 1, SM 0): Out Of Range Address"
    _xid(state, g, 13, text, pid="51200", name="python3", ago=900)
    _xid(state, g, 13, text, pid="51877", name="torchrun", ago=300)
    return [_exp("gpu.xid", "gpu%d" % g["index"], "P2", "13")]


@fault("sram_threshold", "SRAM Threshold Exceeded: Yes (NVIDIA RMA criterion; DCGM fails the GPU)")
def _sram_threshold(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    g["ecc"]["aggregate"]["sram_corr"] += 41000
    g["sram_threshold_exceeded"] = True
    # nvidia-smi -q -x prints <sram_threshold_exceeded> from the R590 (v13) layout on; -q text has the line too
    state["xml_layout"] = "v13"
    return [_exp("gpu.ecc", "gpu%d" % g["index"], "P1", "sram_threshold")]


@fault(
    "tlimit_slowdown",
    "H100 at 83 C whose T.Limit margin is already -1 C (its own limit is lower than the 85 C fallback)",
)
def _tlimit(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    _load(g, 100, 690.0)
    g["temp_c"] = 83
    g["tlimit_ref_c"] = 82  # T.Limit margin = 82 - 83 = -1 C; slowdown at -2 C
    return [_exp("gpu.temperature", "gpu%d" % g["index"], "P2", "gpu")]


@fault("nvlink_replay", "NVLink replay errors growing between two readings (DCGM: replay >= 1)", needs_previous=True)
def _nvlink_replay(state, rng, gpu=None, link=None, prev=None):
    g = _pick_gpu(state, rng, gpu)
    lk = int(link) if link is not None else rng.randrange(0, 18)
    g["nvlinks"][lk]["replay"] += 3
    return [_exp("gpu.nvlink", "gpu%d/nvlink%d" % (g["index"], lk), "P2", "replay")]
