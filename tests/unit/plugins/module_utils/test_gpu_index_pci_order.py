# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 41 (paper cut): a lost GPU showed as "GPU ?" although its bus id places it. nvidia-smi numbers a node's
GPUs in PCI bus order; when it can read none of them it prints only the lost GPU's line (the real sample
tests/fixtures/nvidia-smi-errors/marian251-gpu-is-lost.txt: GPU 0000:03:00.0), and the driver's probe lines in
the kernel log (real form "NVRM: GPU at PCI:0000:07:00: GPU-<uuid>", tests/fixtures/xid-kmsg/) list every GPU
of the node. A capture of four GPUs at 01, 02, 03 and 04:00.0 makes the lost one at 03 GPU 2, by hand."""

from __future__ import annotations

import datetime
import os

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import collect as _collect
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import kernel_events as _kernel
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))), "fixtures")
LOST = os.path.join(FIXTURES, "nvidia-smi-errors", "marian251-gpu-is-lost.txt")
UUIDS = ("8a47641b-dff6-f09f-618c-c3eb58fb430d", "4e391288-897c-ba5d-6944-dfbea55ebcfa",
         "fb51809b-350a-99db-67b5-e16fc6d498ab", "f7b9f45f-f293-6e1a-6d94-aca28b8bc409")  # fmt: skip
NOW = datetime.datetime(2026, 12, 2, 10, 0, tzinfo=datetime.timezone.utc)


def _capture(tmp_path, buses=("04", "02", "03", "01"), extra=""):
    d = tmp_path / "cap"
    d.mkdir(parents=True)
    with open(LOST, encoding="utf-8") as fh:
        (d / "nvidia-smi-q.xml").write_text(fh.read())
    lines = [
        "2026-12-02T06:00:%02d+00:00 n1 kernel: NVRM: GPU at PCI:0000:%s:00: GPU-%s" % (i, b, u)
        for i, (b, u) in enumerate(zip(buses, UUIDS))
    ]
    lines.append("2026-12-02T09:48:21+00:00 n1 kernel: NVRM: Xid (PCI:0000:03:00): 79, pid='<unknown>', name=<unknown>, "
                 "GPU has fallen off the bus.")  # fmt: skip
    (d / "kernel.log").write_text("\n".join(lines) + "\n" + extra)
    return str(d)


def _gpus(facts):
    return [(g["bus_id"], g["index"], g.get("index_source")) for g in facts["gpu"]["gpus"]]


def test_the_probe_lines_in_pci_order():
    text = "[ 365.969676] NVRM: GPU at PCI:0000:bb:00: GPU-4e39\nNVRM: GPU at PCI:0000:19:00: GPU-UID\nNVRM: GPU at x\n"
    assert _kernel.probed_gpus(text) == ["00000000:19:00.0", "00000000:BB:00.0"]
    assert _kernel.probed_gpus(None) == [] and _kernel.probed_gpus("") == []


def test_lost_gpu_gets_its_index_from_pci_order(tmp_path):
    facts = _collect.collect_all(capture_dir=_capture(tmp_path), domains=["gpu", "kernel"])
    assert _gpus(facts) == [("00000000:03:00.0", 2, "pci_order")]
    report = _inspect.inspect_nodes({"n1": {"capture_dir": _capture(tmp_path / "r")}}, now=NOW, include_facts=False)
    messages = [f["message"] for f in report["nodes"]["n1"]["findings"]]
    assert any(m.startswith("GPU 2 (00000000:03:00.0)") for m in messages), messages
    assert not any(m.startswith("GPU ?") for m in messages), messages


def test_without_the_probe_lines_the_index_stays_unknown(tmp_path):
    facts = _collect.collect_all(capture_dir=_capture(tmp_path, buses=()), domains=["gpu", "kernel"])
    assert _gpus(facts) == [("00000000:03:00.0", None, None)]


def test_a_lost_gpu_the_driver_never_listed_is_not_placed(tmp_path):
    facts = _collect.collect_all(capture_dir=_capture(tmp_path, buses=("01", "02", "04")), domains=["gpu", "kernel"])
    assert _gpus(facts) == [("00000000:03:00.0", None, None)]


def test_the_finding_keeps_its_bus_id_component(tmp_path):
    """The label names GPU 2; the finding's component (and id) stays `gpu:<bus id>` as for any unplaced GPU
    (tools/simnode/faults_gpu.py's answer key for xid79 expects that form)."""
    report = _inspect.inspect_nodes({"n1": {"capture_dir": _capture(tmp_path)}}, now=NOW, include_facts=False)
    comps = {f["component"] for f in report["nodes"]["n1"]["findings"] if f["check"] in ("gpu.missing", "gpu.xid")}
    assert comps == {"gpu:00000000:03:00.0"}
