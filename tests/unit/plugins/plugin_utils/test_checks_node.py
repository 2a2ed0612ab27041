# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node checks (_checks/node.py, _checks/domains.py): mounts, services, fabric manager, collector errors."""

from __future__ import annotations


from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect.cluster import node_status
from checks_helpers import PROFILE, facts, only, run


def test_mounts_services_fabric_manager():
    node = {
        "mounts": [
            {"path": "/lustre", "present": True, "responsive": False, "error": "timeout"},
            {"path": "/scratch", "present": True, "responsive": True, "free_pct": 1.0},
            {"path": "/home", "present": False},
        ],
        "services": {
            "nvidia-persistenced": {"running": False},
            "nvidia-fabricmanager": {"running": False, "version": "535.161.08"},
        },
    }
    fs = run(facts(node=node), PROFILE)[0]
    assert only(fs, "node.mounts", "mount:/lustre", "hung")[0]["severity"] == "P1"
    assert only(fs, "node.mounts", "mount:/scratch", "full")[0]["severity"] == "P2"
    assert not only(fs, "node.mounts", "mount:/home")  # not in the profile
    assert only(fs, "node.services", "service:nvidia-persistenced")[0]["severity"] == "P2"
    assert only(fs, "node.fabric_manager", code="not_running")[0]["severity"] == "P1"
    # no profile: FM not running on unknown hardware is no alarm
    assert not only(run(facts(node=node))[0], "node.fabric_manager")
    mism = facts(
        node={
            "fabric_manager_version": "535.154.05",
            "services": {"nvidia-fabricmanager": {"running": True, "version": "535.154.05"}},
        }
    )
    assert only(run(mism)[0], "node.fabric_manager", code="version_mismatch")[0]["severity"] == "P1"


def test_collector_errors():
    errs = [
        {"domain": "gpu", "kind": "timeout", "message": "nvidia-smi timed out after 60 s", "source": "nvidia-smi"},
        {"domain": "ib", "kind": "parse", "message": "bad line", "source": "ibstat", "line": 3},
        {"domain": "ib", "kind": "parse", "message": "bad line 2", "source": "ibstat", "line": 9},
    ]
    fs = run(facts(errors=errs))[0]
    g = only(fs, "collector.error", "collector:gpu", "timeout")[0]
    assert (g["severity"], g["action"]) == ("P1", "reboot") and g["evidence"]["required"] is True
    i = only(fs, "collector.error", "collector:ib", "parse")[0]
    assert i["severity"] == "P2" and i["evidence"]["count"] == 2 and i["evidence"]["required"] is False
    fs = run(facts(errors=[{"domain": "gpu", "kind": "parse", "message": "truncated XML"}]))[0]
    assert node_status(fs) == "error"
    fs = run(facts(errors=errs[1:]))[0]
    assert node_status(fs) == "degraded"


# ------------------------------------------------------------------------------ issue 38: PCIe AER judged
# Line shapes: linux-pci list (aer_inject on a root port: "pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error
# received: 0000:00:01.0" + "pcieport ...: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer,
# (Requester ID)"), gpu-knowledge-2026.md section 7 (NVSentinel test form), drivers/pci/pcie/aer.c ("<driver>
# <bdf>: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)"); BDFs set to the helper's GPU 0
# (0000:18:00.0) and a root port 0000:17:01.0 above it. The Xid 79 line is NVIDIA's Xid line grammar.

import datetime  # noqa: E402

from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.kernel_log import parse_kernel_log  # noqa: E402
from checks_helpers import gpu  # noqa: E402

REF = datetime.datetime(2026, 12, 2, 10, 0, tzinfo=datetime.timezone.utc)
XID79 = "2026-12-02T09:40:01,000000+00:00 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, " \
    "GPU has fallen off the bus.\n"  # fmt: skip
PORT_FATAL = (
    "2026-12-02T09:40:00,000000+00:00 kernel: pcieport 0000:17:01.0: AER: Uncorrected (Fatal) error received: "
    "0000:17:01.0\n"
    "2026-12-02T09:40:00,000100+00:00 kernel: pcieport 0000:17:01.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
    "type=Transaction Layer, (Requester ID)\n"
    "2026-12-02T09:40:00,000200+00:00 kernel: pcieport 0000:17:01.0:   device [8086:1901] error status/mask="
    "00004000/00000000\n"
)
GPU_FATAL = (
    "2026-12-02T09:40:00,000000+00:00 kernel: pcieport 0000:17:01.0: AER: Uncorrected (Fatal) error received: "
    "0000:18:00.0\n"
    "2026-12-02T09:40:00,000100+00:00 kernel: nvidia 0000:18:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
    "type=Transaction Layer, (Requester ID)\n"
)


def corrected(n, bdf="0000:18:00.0", driver="nvidia", minute="09:41"):
    return "".join(
        "2026-12-02T%s:%02d,000000+00:00 kernel: pcieport 0000:17:01.0: AER: Corrected error received: %s\n"
        "2026-12-02T%s:%02d,000100+00:00 kernel: %s %s: PCIe Bus Error: severity=Corrected, type=Physical Layer, "
        "(Receiver ID)\n" % (minute, i % 60, bdf, minute, i % 60, driver, bdf)
        for i in range(n)
    )


def aer_run(text, gpus=None):
    return only(run(facts(events=parse_kernel_log(text, ref_time=REF), gpus=gpus))[0], "node.pcie_aer")


def test_aer_parse_keeps_the_receiving_port_and_the_printing_driver():
    (ev,) = parse_kernel_log(GPU_FATAL, ref_time=REF)
    assert (ev["bus_id"], ev["severity"]) == ("00000000:18:00.0", "fatal")
    assert ev["detail"] == {"reporter": "00000000:17:01.0", "type": "Transaction Layer", "driver": "nvidia"}
    (port,) = parse_kernel_log(PORT_FATAL, ref_time=REF)
    assert port["detail"]["driver"] == "pcieport" and port["bus_id"] == "00000000:17:01.0"


def test_xid79_with_port_aer_points_at_the_slot_with_gpu_aer_at_the_gpu():
    (f,) = aer_run(PORT_FATAL + XID79)
    assert (f["component"], f["code"], f["severity"], f["action"]) == ("gpu0", "xid79", "P1", "reseat")
    assert f["evidence"]["points_at"] == "slot_riser" and list(f["evidence"]["port_aer"]) == ["00000000:17:01.0"]
    (g,) = aer_run(GPU_FATAL + XID79)
    assert (g["code"], g["action"], g["evidence"]["points_at"]) == ("xid79", "contact_vendor", "gpu")
    assert "replace the GPU" in g["evidence"]["remedy"]
    # Xid 79 alone: gpu.xid's, nothing here
    assert not aer_run(XID79)


def test_uncorrectable_aer_without_xid79_and_unrelated_devices():
    (f,) = aer_run(GPU_FATAL)
    assert (f["component"], f["code"], f["severity"], f["action"]) == ("gpu0", "fatal", "P1", "diagnose")
    nonfatal = GPU_FATAL.replace("Uncorrected (Fatal)", "Uncorrected (Non-Fatal)")
    assert [(x["code"], x["severity"]) for x in aer_run(nonfatal)] == [("nonfatal", "P2")]
    # a NIC's AER (mlx5_core, received by a port above no GPU): not this check's
    nic = (
        "2026-12-02T09:40:00,000000+00:00 kernel: pcieport 0000:5d:00.0: AER: Uncorrected (Non-Fatal) error "
        "received: 0000:5e:00.0\n"
        "2026-12-02T09:40:00,000100+00:00 kernel: mlx5_core 0000:5e:00.0: PCIe Bus Error: severity=Uncorrected "
        "(Non-Fatal), type=Transaction Layer, (Requester ID)\n"
    )
    assert not aer_run(nic)
    # outside the kernel-event window (kernel_events.lookback_hours = 2 back from the evidence time): nothing
    assert not aer_run(GPU_FATAL.replace("2026-12-02T09:40", "2026-11-01T09:40"))


def test_corrected_aer_against_dcgm_limits():
    # helper GPUs are Gen5 x16: DCGM's 32/min applies; a Gen4 GPU: 16/min
    assert not aer_run(corrected(17))
    (f,) = aer_run(corrected(33))
    assert (f["code"], f["severity"], f["action"]) == ("corrected", "P2", "diagnose")
    assert f["evidence"]["peak_per_minute"] == 33 and f["evidence"]["limit_per_minute"] == 32
    gen4 = [gpu(0, pcie={"gen_current": 4, "gen_max": 4, "width_current": 16, "width_max": 16})] + [
        gpu(i) for i in range(1, 8)
    ]
    assert [x["code"] for x in aer_run(corrected(17), gpus=gen4)] == ["corrected"]
    # spread over many minutes: under the per-minute limit but over DCGM's total of 480
    spread = "".join(corrected(15, minute="09:%02d" % m) for m in range(10, 42))
    (t,) = aer_run(spread)
    assert t["evidence"]["corrected"] == 480 and t["evidence"]["peak_per_minute"] == 15
