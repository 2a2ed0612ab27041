# Integration test: gpuops.cluster.kernel_events_info (and dcgm_diag_info) through ansible-playbook on localhost,
# against a capture directory holding real kernel logs, and live with a fake journalctl/dcgmi.
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures")
BIN = os.path.dirname(sys.executable)
PLAYBOOK = os.path.join(BIN, "ansible-playbook")

pytestmark = pytest.mark.skipif(not os.path.exists(PLAYBOOK), reason="ansible-playbook not installed in this venv")

PLAY = """
- name: Kernel events and DCGM diagnostics
  hosts: localhost
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{{{ ansible_playbook_python }}}}"
  tasks:
    - name: Kernel events from a capture directory, mapped to GPU indexes
      gpuops.cluster.kernel_events_info:
        capture_dir: "{cap}"
        gpus:
          - {{index: 2, bus_id: "00000000:19:00.0"}}
          - {{index: 6, bus_id: "00000001:6C:00.0"}}
      register: cap

    - name: Kernel events live (a fake journalctl on PATH), in check mode
      gpuops.cluster.kernel_events_info:
        since: -1h
        timeout: 10
      environment:
        PATH: "{fakebin}:{{{{ ansible_env.PATH | default('/usr/bin:/bin') }}}}"
      check_mode: true
      register: live

    - name: DCGM diagnostic run with the fake dcgmi
      gpuops.cluster.dcgm_diag_info:
        run_level: 2
        dcgmi_path: "{dcgmi}"
        timeout: 20
      environment:
        FAKE_DCGMI_FIXTURE: "{diag}"
      register: diag

    - name: The results hold what the fixtures say
      ansible.builtin.assert:
        that:
          - cap.kernel.source == 'capture:kernel.log'
          - cap.kernel.boot_id == 'cap-boot-1'
          - cap.kernel.errors | length == 0
          - cap.kernel.events | selectattr('code', 'equalto', 48) | list | length == 1
          - (cap.kernel.events | selectattr('code', 'equalto', 48) | first).gpu_index == 2
          - (cap.kernel.events | selectattr('code', 'equalto', 119) | first).gpu_index == 6
          - live.kernel.source == 'journalctl'
          - live.kernel.events[0].code == 79
          - diag.dcgm.overall == 'fail'
          - diag.dcgm.tests[0].name == 'pcie'
          - cap is not changed and live is not changed and diag is not changed

    - name: Save the results for the test
      ansible.builtin.copy:
        content: "{{{{ {{'cap': cap.kernel, 'live': live.kernel, 'diag': diag.dcgm}} | to_json }}}}"
        dest: "{out}"
        mode: "0644"
"""


def _read(*parts):
    with open(os.path.join(FIX, *parts), encoding="utf-8") as fh:
        return fh.read()


def test_playbook(tmp_path):
    cap = tmp_path / "cap"
    cap.mkdir()
    # One kernel.log holding three real captures in different prefixes (dmesg iso, dmesg -T, journal with a
    # Polish month), as a ticket attachment concatenating them would.
    (cap / "kernel.log").write_text(
        _read("xid-kmsg", "gpud-xid48-63-94-dbe-rowremap-contained.log")
        + _read("xid-kmsg", "vllm40652-8xa100-xid119-gsp-timeout-45s.log")
        + _read("xid-kmsg", "ogkm1045-polish-journal-xid38-109.log")
        + _read("xid-kmsg", "nvsentinel155-fallen-off-bus-multiline-no-xid.log")
    )
    (cap / "capture.json").write_text(json.dumps({"captured_at": "2026-12-02T10:00:00Z", "boot_id": "cap-boot-1"}))
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    jc = fakebin / "journalctl"
    jc.write_text(
        '#!/bin/sh\necho "$@" > %s/jc-args\n'
        "echo '2026-12-02T09:58:01+0000 gpu-node-01 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, "
        "GPU has fallen off the bus.'\n" % tmp_path
    )
    jc.chmod(0o755)
    out = tmp_path / "out.json"
    pb = tmp_path / "play.yml"
    pb.write_text(
        PLAY.format(
            cap=cap,
            fakebin=fakebin,
            dcgmi=os.path.join(FIX, "bin", "dcgmi"),
            diag=os.path.join(FIX, "dcgmi-diag", "dcgm-issue254-v100-dcgm441-pcie-fail.txt"),
            out=out,
        )
    )
    env = dict(os.environ)
    # ANSIBLE_INVENTORY="localhost," would be read as a path list whose empty entry is the cwd: a directory
    # inventory that walks the whole repository (and the build/ symlink loop). Pass -i instead.
    env.pop("ANSIBLE_INVENTORY", None)
    env.update(
        PATH=BIN + os.pathsep + env.get("PATH", ""),
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build"),
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_NOCOLOR="1",
    )
    t0 = time.monotonic()
    proc = subprocess.run(
        [PLAYBOOK, "-i", "localhost,", "-c", "local", str(pb)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert time.monotonic() - t0 < 120
    res = json.loads(out.read_text())
    kinds = [(e["kind"], e["code"]) for e in res["cap"]["events"]]
    assert kinds == [("xid", 48), ("xid", 63)] + [("xid", 94)] * 9 + [("xid", 119)] * 2 + [
        ("xid", 38), ("xid", 109), ("xid", 109), ("fallen_off_bus", None)
    ]  # fmt: skip
    times = [e["timestamp"] for e in res["cap"]["events"]]
    assert times[0] == "2024-11-15T12:02:03.470068+00:00"
    assert times[11] == "2026-04-26T23:12:26"
    assert times[13] == "2026-04-15T07:56:59"  # 'kwi' placed with the capture's year
    assert times[-1] is None
    assert res["cap"]["events"][-1]["bus_id"] == "00000000:B3:00.0"
    assert (tmp_path / "jc-args").read_text().split()[-2:] == ["--since", "-1h"]
    assert res["live"]["events"][0]["process"] == "python"
    assert res["diag"]["source"] == "dcgmi" and res["diag"]["level"] == 2
