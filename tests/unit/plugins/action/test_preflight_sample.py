# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.preflight with ``sample``: the probes and BMC settings read from the sampled hosts' variables
(what playbooks/preflight.yml assembled in two Jinja loops before issue 36). Expected values: the action's own
documentation (a host without a probe is "not probed"; BMC settings as booleans, never the values)."""

from __future__ import annotations

from ansible_collections.gpuops.cluster.plugins.action import preflight as A

PROBE_OK = {"rc": 0, "stdout": "root\n", "unreachable": False}


def test_sample_reads_probes_and_bmc_booleans(run_action, monkeypatch):
    monkeypatch.delenv("GPUOPS_BMC_USER", raising=False)
    monkeypatch.delenv("GPUOPS_BMC_PASSWORD", raising=False)
    hostvars = {
        "n1": {"__preflight_probe": PROBE_OK, "gpuops_bmc_address": "10.0.0.1"},
        "n2": {"gpuops_bmc_address": "", "gpuops_bmc_user": "admin", "gpuops_bmc_password": "s3cret"},
    }
    out = run_action(A, {"sample": ["n1", "n2", "n9"], "fail": False}, task_vars={"hostvars": hostvars})
    text = "\n".join(out["lines"])
    assert "s3cret" not in str(out)
    # n2 had no probe and n9 is not in the inventory: both "not probed"; n1 answered
    assert "n2, n9 (not probed)" in text and "n1," not in text.split("ssh:")[1].split("\n")[0]
    # n1 has an address and no credentials; n2 and n9 have no address
    assert "BMC address without credentials on 1 sampled node(s): n1" in text
    assert "no gpuops_bmc_address on 2 sampled node(s): n2, n9" in text
    assert "3 of 0 target node(s) sampled" in out["summary"]
