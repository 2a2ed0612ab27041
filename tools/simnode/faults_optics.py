"""Optics and link-quality faults of the catalogue (issue 20): transceiver Rx power, BER, RoCE PFC storm, NVLink speed.

Each renders through simnode.render_optics (mlxlink-<hca>.txt, ethtool-m/-S-<if>.txt) or the nvidia-smi nvlink -s
renderer, and declares the findings the policy must produce (the answer key).
"""

from __future__ import annotations

from simnode.fault_kit import _exp, _pick_gpu, _pick_hca, fault

ROCE_IF = "ens9f0np0"


def _optics(h: dict) -> dict:
    return h.setdefault("optics", {})


@fault("optics_rx_low_warning", "transceiver Rx power of one lane under the warning level (dirty fibre): P2 reseat")
def _rx_warning(state, rng, hca=None):
    h = _pick_hca(state, rng, hca)
    _optics(h)["module"] = {"rx": [1.886, -8.35, 2.281, 1.976]}  # alarm -10.41, warning band to -7.41
    return [_exp("ib.optics", "%s/1" % h["name"], "P2", "rx_power")]


@fault("optics_rx_alarm", "transceiver Rx power of one lane under the module's low alarm threshold: P1 reseat")
def _rx_alarm(state, rng, hca=None):
    h = _pick_hca(state, rng, hca)
    _optics(h)["module"] = {"rx": [1.886, 1.989, -13.2, 1.976]}
    return [_exp("ib.optics", "%s/1" % h["name"], "P1", "rx_power")]


@fault("optics_high_ber", "effective (post-FEC) BER 2E-10 and symbol errors on an IB link: P1 reseat")
def _high_ber(state, rng, hca=None):
    h = _pick_hca(state, rng, hca)
    _optics(h)["phy"] = {
        "symbol_errors": 91834,
        "symbol_ber": 3e-12,
        "effective_errors": 96512,
        "effective_ber": 2e-10,
        "raw_lanes": [91234567, 102345678, 88123456, 95012345],
        "raw_ber": 4e-5,
    }
    return [_exp("ib.ber", "%s/1" % h["name"], "P1", "ber")]


@fault(
    "optics_fec_corrected",
    "raw (pre-FEC) BER 1E-7 that FEC fully corrects (effective BER clean): P3 advice only, never P0-P2",
)
def _fec_corrected(state, rng, hca=None):
    h = _pick_hca(state, rng, hca)
    _optics(h)["phy"] = {"raw_lanes": [32379149, 156821, 2201, 1987], "raw_ber": 1e-7}
    return [_exp("ib.ber", "%s/1" % h["name"], "P3", "raw_ber")]


@fault("roce_pfc_storm", "PFC pause storm on a RoCE port: rx/tx_prio3_pause growing 4000/s between readings",
       needs_previous=True)  # fmt: skip
def _pfc_storm(state, rng, prev=None):
    base = {"rx_prio3_pause": 1523, "tx_prio3_pause": 2847}
    if prev is not None:
        prev.setdefault("netdevs", []).append({"name": ROCE_IF, "stats": dict(base)})
    age = state["now"] - prev["now"] if prev is not None else 900
    grown = {
        "rx_prio3_pause": base["rx_prio3_pause"] + int(2500 * age),
        "tx_prio3_pause": base["tx_prio3_pause"] + int(1500 * age),
    }
    state.setdefault("netdevs", []).append({"name": ROCE_IF, "stats": grown})
    return [_exp("ib.congestion", "net:%s" % ROCE_IF, "P2", "pfc_pause")]


@fault("nvlink_downshift", "four NVLinks of one GPU trained at half speed (13.281 GB/s instead of 26.562)")
def _nvlink_downshift(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    for lk in g["nvlinks"][:4]:
        lk["speed"] = "13.281"
    return [_exp("gpu.nvlink", "gpu%d" % g["index"], "P2", "speed")]
