"""Faults that the zero-config baseline finds from peers when no profile says what to expect (issue 20)."""

from __future__ import annotations

from simnode.fault_kit import _exp, _pick_gpu, fault


@fault(
    "nvlink_gpu_down",
    "Every NVLink of one GPU down while its siblings' are up (nvidia-smi lists none of its links as active)",
)
def _nvlink_gpu_down(state, rng, gpu=None):
    g = _pick_gpu(state, rng, gpu)
    for lk in g["nvlinks"]:
        lk["up"] = False
    # with a profile: fewer links than nvlinks_per_gpu (code missing); without: its siblings' links (all_down)
    return [_exp("gpu.nvlink", "gpu%d" % g["index"], "P1", None)]
