# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.gpu_reset_outcome (plugin_utils/change/gpu_reset_outcome.py): a GPU reset rollout's outcome.

Expected values: docs/isolation.md's GPU reset section (reset -> verify -> resume; a process attached refuses;
a failed reset leaves the node drained or reboots; one node at a time, the rest not started) and the outcome
vocabulary of docs/operations.md, typed out by hand. The nvidia-smi text is nvidia-smi(1)'s reset refusal.
"""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.action import gpu_reset_outcome as A
from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import gpu_reset_outcome as gr

RESULTS = {
    "ok": {"outcome": "reset", "gpus": [2], "resumed": True, "slurm_state": "IDLE", "slurm_reason_set": None},
    "boot": {"outcome": "rebooted", "gpus": [0, 1], "resumed": True},
    "kept": {"outcome": "reset", "gpus": [2], "resumed": False, "msg": "inspection failed: Xid 79"},
    "none": {"outcome": "nothing_to_do"},
    "proc": {"outcome": "refused_process_attached", "msg": "process 4242", "slurm_reason_set": "GPU reset refused"},
    "gone": {"outcome": "unreachable", "msg": "ssh: connect to host"},
    "guard": {"outcome": "not_isolated", "refused_by_guard": True, "msg": "limit 1"},
    "slurm": {"outcome": "not_isolated", "msg": "Slurm refused"},
    "left": {"outcome": "left_drained", "msg": "Unable to reset GPU"},
    "mid": {"outcome": "resetting"},
}


def test_every_outcome():
    nodes = list(RESULTS) + ["later"]
    out = gr.outcome(nodes, RESULTS, {"mid": "the node stopped answering"})
    assert out["ok"] == {
        "outcome": "done",
        "detail": "GPU 2 reset, back in service",
        "slurm_state": "IDLE",
        "slurm_reason": None,
    }
    assert out["boot"]["detail"] == "GPU 0,1 reset after a reboot, back in service"
    assert out["kept"] == {"outcome": "left_drained", "detail": "GPU reset done, not resumed",
                           "error": "inspection failed: Xid 79", "slurm_state": None, "slurm_reason": None}  # fmt: skip
    assert out["none"]["outcome"] == "skipped" and out["none"]["detail"] == "no GPU needed a reset"
    assert out["proc"]["outcome"] == "refused" and out["proc"]["slurm_reason"] == "GPU reset refused"
    assert out["gone"]["detail"] == "node unreachable"
    assert out["guard"]["detail"] == "not drained: refused by the blast-radius guard"
    assert out["slurm"]["outcome"] == "failed" and out["slurm"]["detail"] == "not drained"
    assert out["left"]["detail"] == "GPU reset failed, node left drained"
    assert out["mid"] == {"outcome": "unconfirmed", "detail": "the run stopped during the reset (resetting)",
                          "error": "the node stopped answering", "slurm_state": None, "slurm_reason": None}  # fmt: skip
    assert out["later"]["outcome"] == "not_started"
    # without the resume step a reset node is done
    assert gr.outcome(["kept"], RESULTS, {}, resume=False)["kept"]["detail"] == "GPU 2 reset"


def test_error_text_keeps_each_failed_items_output():
    failed = {"msg": "One or more items failed", "results": [
        {"failed": False, "stdout": "GPU 00000000:00:02.0 was successfully reset."},
        {"failed": True, "stderr": "Unable to reset GPU 00000000:00:03.0:\n  In use by another client", "stdout": ""},
        {"failed": True, "msg": "timeout"},
    ]}  # fmt: skip
    assert gr.error_text(failed) == "Unable to reset GPU 00000000:00:03.0: In use by another client; timeout"
    assert gr.error_text({"msg": "boom"}) == "boom" and gr.error_text(None) == "reset failed"


def test_action_reads_host_vars(run_action):
    out = run_action(
        A, {"nodes": ["a", "b"]}, task_vars={"hostvars": {"a": {"gpu_reset_result": RESULTS["ok"]}, "b": {}}}
    )
    assert out["outcome"]["a"]["outcome"] == "done" and out["outcome"]["b"]["outcome"] == "not_started"
