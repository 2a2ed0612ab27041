# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_gpu.collect(): capture directories and the live path against the fake nvidia-smi."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.gpu import collect

FIX = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures"))
SMI = os.path.join(FIX, "bin", "nvidia-smi")
H100_TEXT = os.path.join(FIX, "nvidia-smi-q-text", "gpud-8xh100-535.161.08-hw-power-brake.txt")
V100_XML = os.path.join(FIX, "nvidia-smi-xml", "datakit-8xv100s-pcie-460.73.01.xml")
A100_NVLINK = os.path.join(FIX, "nvlink", "gpud-a100-nvlink-status.txt")
LOST = os.path.join(FIX, "nvidia-smi-errors", "marian251-gpu-is-lost.txt")
KEYS = ["source", "driver_version", "cuda_version", "count", "gpus", "errors"]


def _cap(tmp_path, files, meta=None):
    for name, src in files.items():
        if isinstance(src, bytes):
            (tmp_path / name).write_bytes(src)
        else:
            shutil.copy(src, tmp_path / name)
    if meta is not None:
        (tmp_path / "capture.json").write_text(json.dumps(meta))
    return str(tmp_path)


def test_capture_xml_preferred_over_text(tmp_path):
    res = collect(capture_dir=_cap(tmp_path, {"nvidia-smi-q.xml": V100_XML, "nvidia-smi-q.txt": H100_TEXT}))
    assert list(res) == KEYS
    assert res["source"] == "capture:nvidia-smi-q.xml"
    assert res["count"] == 8 and res["gpus"][0]["serial"] == "1562920006088"
    assert res["errors"] == []


def test_capture_text_with_nvlink_files(tmp_path):
    text = open(H100_TEXT, encoding="utf-8").read()
    uuids = [ln.split(" : ")[1].strip() for ln in text.splitlines() if "GPU UUID" in ln]
    nvs = "".join(
        "GPU %d: NVIDIA H100 80GB HBM3 (UUID: %s)\n\t Link 0: 26.562 GB/s\n" % (i, u) for i, u in enumerate(uuids)
    )
    nve = "GPU 3: NVIDIA H100 80GB HBM3 (UUID: %s)\n\t Link 0: Replay Errors: 0\n\t Link 0: CRC Errors: 41\n" % uuids[3]
    d = _cap(
        tmp_path,
        {
            "nvidia-smi-q.txt": H100_TEXT,
            "nvidia-smi-nvlink-s.txt": nvs.encode(),
            "nvidia-smi-nvlink-e.txt": nve.encode(),
        },
    )
    res = collect(capture_dir=d)
    assert res["source"] == "capture:nvidia-smi-q.txt"
    assert res["errors"] == []
    assert res["gpus"][3]["nvlink"]["links"][0] == {
        "link": 0,
        "state": "up",
        "speed_gbps": 26.562,
        "errors": {"replay": 0, "recovery": None, "crc_flit": 41, "crc_data": None},
    }
    assert all(g["nvlink"] for g in res["gpus"])


def test_capture_nvlink_of_another_node_is_not_merged(tmp_path):
    res = collect(capture_dir=_cap(tmp_path, {"nvidia-smi-q.txt": H100_TEXT, "nvidia-smi-nvlink-s.txt": A100_NVLINK}))
    assert all(g["nvlink"] is None for g in res["gpus"])
    assert len(res["errors"]) == 1 and res["errors"][0]["kind"] == "parse"
    assert res["errors"][0]["message"].startswith("8 NVLink GPU entries matched no GPU")
    assert res["errors"][0]["source"] == "capture:nvidia-smi-nvlink-s.txt"


def test_capture_error_only_file_and_capture_json(tmp_path):
    meta = {"files": {"nvidia-smi-q.xml": {"rc": 15, "stderr": "", "timed_out": False}}}
    res = collect(capture_dir=_cap(tmp_path, {"nvidia-smi-q.xml": LOST}, meta))
    assert res["count"] == 1
    g = res["gpus"][0]
    assert (g["readable"], g["bus_id"]) == (False, "00000000:03:00.0")
    assert "GPU is lost" in g["error"]
    # the non-zero exit is explained by the unreadable GPU: one error, not two
    assert [e["kind"] for e in res["errors"]] == ["unreadable"]
    assert "GPU is lost" in res["errors"][0]["message"]


def test_capture_empty_file_timed_out(tmp_path):
    meta = {"files": {"nvidia-smi-q.xml": {"rc": None, "stderr": "", "timed_out": True}}}
    res = collect(capture_dir=_cap(tmp_path, {"nvidia-smi-q.xml": b""}, meta))
    assert [e["kind"] for e in res["errors"]] == ["timeout"]
    assert res["gpus"] == []


def test_capture_error_on_stderr_only(tmp_path):
    meta = {
        "files": {
            "nvidia-smi-q.xml": {
                "rc": 255,
                "stderr": "Unable to determine the device handle for GPU0000:07:00.0: Unknown Error\n",
                "timed_out": False,
            }
        }
    }
    res = collect(capture_dir=_cap(tmp_path, {"nvidia-smi-q.xml": b""}, meta))
    kinds = sorted(e["kind"] for e in res["errors"])
    assert kinds == ["unreadable"]
    assert res["gpus"][0]["bus_id"] == "00000000:07:00.0"


def test_capture_truncated_xml_keeps_complete_gpus(tmp_path):
    text = open(V100_XML, encoding="utf-8").read()
    cut = text[: text.index('<gpu id="00000000:00:12.0">') + 900].encode()
    res = collect(capture_dir=_cap(tmp_path, {"nvidia-smi-q.xml": cut}))
    assert len(res["gpus"]) == 5 and res["count"] == 8
    assert res["errors"][0]["kind"] == "parse" and "truncated" in res["errors"][0]["message"]


def test_capture_broken_meta_huge_file_and_missing(tmp_path):
    (tmp_path / "capture.json").write_text("{not json")
    with open(tmp_path / "nvidia-smi-q.xml", "wb") as fh:
        fh.truncate(65 * 1024 * 1024)  # sparse: over the 64 MiB limit without writing it
    shutil.copy(H100_TEXT, tmp_path / "nvidia-smi-q.txt")
    res = collect(capture_dir=str(tmp_path))
    assert res["source"] == "capture:nvidia-smi-q.txt" and len(res["gpus"]) == 8
    assert [e["kind"] for e in res["errors"]] == ["parse", "unreadable"]  # bad capture.json; XML over the cap
    empty = collect(capture_dir=str(tmp_path / "nope"))
    assert (empty["source"], empty["gpus"], empty["errors"]) == (None, [], [])  # a partial capture: nothing said
    # a capture that ran nvidia-smi and could not: missing evidence (unknown), never "no GPUs" (gpu.missing, isolate)
    (tmp_path / "cap2").mkdir()
    meta = {
        "files": {
            "nvidia-smi-q.xml": {
                "argv": ["nvidia-smi", "-q", "-x"],
                "rc": None,
                "error": "nvidia-smi not found on PATH",
            }
        }
    }
    (tmp_path / "cap2" / "capture.json").write_text(json.dumps(meta))
    gone = collect(capture_dir=str(tmp_path / "cap2"))
    assert gone["gpus"] == [] and [(e["kind"], e["message"]) for e in gone["errors"]] == [
        ("missing", "nvidia-smi not found on PATH")
    ]


def test_capture_non_utf8(tmp_path):
    raw = open(V100_XML, "rb").read().replace(b"Tesla V100S", b"Tesla \xffV100S", 1)
    res = collect(capture_dir=_cap(tmp_path, {"nvidia-smi-q.xml": raw}))
    assert res["gpus"][0]["name"] == "Tesla \ufffdV100S-PCIE-32GB"


@pytest.fixture
def fake_smi(monkeypatch, tmp_path):
    for var in (
        "FAKE_NVSMI_XML",
        "FAKE_NVSMI_TEXT",
        "FAKE_NVSMI_NVLINK_S",
        "FAKE_NVSMI_NVLINK_E",
        "FAKE_NVSMI_SLEEP",
        "FAKE_NVSMI_RC",
        "FAKE_NVSMI_STDERR",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", os.path.dirname(SMI) + os.pathsep + os.environ.get("PATH", ""))
    return monkeypatch


def test_live_nvidia_smi_xml_and_nvlink(fake_smi, tmp_path):
    text = open(V100_XML, encoding="utf-8").read()
    uuid0 = text.split("<uuid>")[1].split("<")[0]
    nvs = tmp_path / "s.txt"
    nvs.write_text("GPU 0: Tesla V100S-PCIE-32GB (UUID: %s)\n\t Link 0: 25 GB/s\n\t Link 1: <inactive>\n" % uuid0)
    fake_smi.setenv("FAKE_NVSMI_XML", V100_XML)
    fake_smi.setenv("FAKE_NVSMI_NVLINK_S", str(nvs))
    res = collect(use_nvml=False, timeout=10)
    assert res["source"] == "nvidia-smi-xml"
    assert res["errors"] == []
    assert res["count"] == 8 and res["gpus"][0]["temperature"]["gpu_c"] == 66
    assert [lk["state"] for lk in res["gpus"][0]["nvlink"]["links"]] == ["up", "down"]
    assert res["gpus"][1]["nvlink"] is None


def test_live_nvidia_smi_hangs(fake_smi):
    fake_smi.setenv("FAKE_NVSMI_SLEEP", "30")
    start = time.monotonic()
    res = collect(use_nvml=False, timeout=1.0)
    assert time.monotonic() - start < 3.0
    assert [e["kind"] for e in res["errors"]] == ["timeout"]
    assert "timed out" in res["errors"][0]["message"]


def test_live_gpu_lost_nonzero_exit(fake_smi):
    fake_smi.setenv("FAKE_NVSMI_XML", LOST)
    fake_smi.setenv("FAKE_NVSMI_RC", "15")
    res = collect(use_nvml=False, timeout=10)
    assert res["gpus"][0]["readable"] is False
    assert sorted(e["kind"] for e in res["errors"]) == ["unreadable"]


def test_live_missing_binary(fake_smi):
    res = collect(use_nvml=False, nvidia_smi="no-such-nvidia-smi-here", timeout=5)
    assert [e["kind"] for e in res["errors"]] == ["missing"]


def test_internal_error_is_an_error_record(monkeypatch):
    from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import gpu as _gpu

    def boom(*_a, **_k):
        raise RuntimeError("bug")

    monkeypatch.setattr(_gpu, "collect_capture", boom)
    res = collect(capture_dir="/x")
    assert res["errors"][0]["kind"] == "internal" and "bug" in res["errors"][0]["message"]


def test_capture_nvlink_all_inactive_on_stderr(tmp_path):
    text = open(V100_XML, encoding="utf-8").read()
    uuid0 = text.split("<uuid>")[1].split("<")[0]
    meta = {
        "files": {
            "nvidia-smi-nvlink-s.txt": {
                "rc": 0,
                "stderr": "NVML: Unable to retrieve NVLink information as all links are inactive\n",
                "timed_out": False,
            }
        }
    }
    nvs = ("GPU 0: Tesla V100S-PCIE-32GB (UUID: %s)\n" % uuid0).encode()
    res = collect(capture_dir=_cap(tmp_path, {"nvidia-smi-q.xml": V100_XML, "nvidia-smi-nvlink-s.txt": nvs}, meta))
    assert res["errors"] == []
    assert res["gpus"][0]["nvlink"] == {
        "links": [],
        "error": "NVML: Unable to retrieve NVLink information as all links are inactive",
    }


def test_live_nvlink_failure_is_reported(fake_smi, tmp_path):
    fake_smi.setenv("FAKE_NVSMI_XML", V100_XML)
    # The fake prints the XML for -q -x and nothing for nvlink; make it fail for everything.
    err = tmp_path / "err.txt"
    err.write_text("Failed to initialize NVML: Driver/library version mismatch\n")
    fake_smi.setenv("FAKE_NVSMI_STDERR", str(err))
    fake_smi.setenv("FAKE_NVSMI_RC", "18")
    res = collect(use_nvml=False, timeout=10)
    assert len(res["gpus"]) == 8
    assert [e["kind"] for e in res["errors"]] == ["tool_error"] * 3
    assert [e["source"] for e in res["errors"]] == ["nvidia-smi-xml", "nvidia-smi nvlink -s", "nvidia-smi nvlink -e"]
    assert all("exit 18: Failed to initialize NVML" in e["message"] for e in res["errors"])


def test_live_hang_after_some_gpus_keeps_them(fake_smi, tmp_path):
    text = open(V100_XML, encoding="utf-8").read()
    part = tmp_path / "part.xml"
    part.write_text(text[: text.index('<gpu id="00000000:00:0F.0">') + 100])
    fake_smi.setenv("FAKE_NVSMI_XML", str(part))
    # Print first, then hang: a wrapper around the fake.
    wrapper = tmp_path / "nvidia-smi"
    wrapper.write_text('#!/bin/sh\ncat "$FAKE_NVSMI_XML"\nexec sleep 30\n')
    wrapper.chmod(0o755)
    start = time.monotonic()
    res = collect(use_nvml=False, timeout=1.0, nvidia_smi=str(wrapper))
    assert time.monotonic() - start < 3.0
    assert [g["bus_id"] for g in res["gpus"]] == ["00000000:00:0D.0", "00000000:00:0E.0"]
    assert [e["kind"] for e in res["errors"]] == ["timeout", "parse"]
    assert "truncated" in res["errors"][1]["message"]


def test_capture_empty_file_with_rc_zero_is_reported(tmp_path):
    meta = {"files": {"nvidia-smi-q.xml": {"rc": 0, "stderr": "", "timed_out": False}}}
    res = collect(capture_dir=_cap(tmp_path, {"nvidia-smi-q.xml": b""}, meta))
    assert [(e["kind"], e["message"]) for e in res["errors"]] == [("parse", "empty file")]


def _slow_xml(tmp_path, delay, nvlink="exec sleep 30"):
    """A wrapper nvidia-smi: ``-q -x`` answers after ``delay`` seconds; ``nvlink`` runs ``nvlink`` (shell)."""
    wrapper = tmp_path / "nvidia-smi"
    wrapper.write_text('#!/bin/sh\nif [ "$1" = nvlink ]; then %s; fi\nsleep %s\ncat "%s"\n' % (nvlink, delay, V100_XML))
    wrapper.chmod(0o755)
    return str(wrapper)


def test_nvlink_skipped_after_a_slow_but_answering_query_is_not_a_hang(fake_smi, tmp_path):
    # -q -x answered (8 GPUs) with 0.6 s of a 1.2 s budget left: under _MIN_NVLINK_BUDGET (1 s) nvlink is not
    # started. Nothing hung: the record is `skipped` (P2 monitor), never `timeout` (the gpu:timeout reboot)
    res = collect(use_nvml=False, timeout=1.2, nvidia_smi=_slow_xml(tmp_path, 0.6))
    assert len(res["gpus"]) == 8
    assert [(e["kind"], e["message"]) for e in res["errors"]] == [
        ("skipped", "nvidia-smi nvlink -s skipped: timeout budget spent")
    ]


def test_nvlink_killed_with_little_budget_left_is_skipped_with_a_full_budget_a_hang(fake_smi, tmp_path, monkeypatch):
    from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import gpu as gpu_collector

    exe = _slow_xml(tmp_path, 0)
    # 1.5 s left for nvlink, below the 5 s a kill needs before it is evidence of a hang
    res = collect(use_nvml=False, timeout=1.5, nvidia_smi=exe)
    assert len(res["gpus"]) == 8 and [e["kind"] for e in res["errors"]] == ["skipped"]
    assert res["errors"][0]["source"] == "nvidia-smi nvlink -s"
    # the same hang given the hang threshold's worth of time (threshold lowered to 1 s for the test): a timeout
    monkeypatch.setattr(gpu_collector, "_MIN_HANG_EVIDENCE", 1.0)
    res = collect(use_nvml=False, timeout=1.5, nvidia_smi=exe)
    assert [e["kind"] for e in res["errors"]] == ["timeout"]
