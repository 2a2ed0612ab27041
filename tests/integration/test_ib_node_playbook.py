# Integration test: gpuops.cluster.infiniband_info and gpuops.cluster.node_info through ansible-playbook on
# localhost, against capture directories and a fake sysfs root with the kernel's real link layout.
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures")
REAL_LAYOUT = os.path.join(FIX, "sysfs-trees", "real-layout-2hca")
BIN = os.path.dirname(sys.executable)
PLAYBOOK = os.path.join(BIN, "ansible-playbook")

pytestmark = pytest.mark.skipif(not os.path.exists(PLAYBOOK), reason="ansible-playbook not installed in this venv")

PLAY = """
- name: IB and node facts
  hosts: localhost
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{{{ ansible_playbook_python }}}}"
  tasks:
    - name: IB facts from a capture directory (sysfs copy beside an ibstat.txt)
      gpuops.cluster.infiniband_info:
        capture_dir: "{cap}"
      register: ib_cap

    - name: IB facts live, from a fake sysfs root with the real link layout (subsystem loops)
      gpuops.cluster.infiniband_info:
        sysfs_root: "{real}"
        ibstat_path: /nonexistent/ibstat
        timeout: 10
      register: ib_live

    - name: Node facts from the same capture directory
      gpuops.cluster.node_info:
        capture_dir: "{cap}"
        mounts: [/lustre]
      register: node_cap

    - name: Node facts live, in check mode
      gpuops.cluster.node_info:
        mounts: [/, /not-mounted-here]
        filesystems: [/]
        services: [nvidia-fabricmanager]
        timeout: 5
      check_mode: true
      register: node_live

    - name: The results hold what the fixtures say
      ansible.builtin.assert:
        that:
          - ib_cap.ib.source == 'capture:sysfs'
          - ib_cap.ib.hcas | length == 9
          - ib_cap.ib.boot_id == 'cap-boot-1'
          - (ib_cap.ib.hcas | selectattr('name', 'equalto', 'mlx5_1') | first).ports[0].saturated
            == ['excessive_buffer_overrun_errors', 'link_downed']
          - ib_live.ib.source == 'sysfs'
          - ib_live.ib.hcas | map(attribute='name') | list == ['mlx5_0', 'mlx5_1']
          - ib_live.ib.errors | length == 2
          - node_cap.node.source == 'capture:node.json'
          - node_cap.node.fabric_manager_version == '535.161.08'
          - node_live.node.mounts[0].responsive
          - not node_live.node.mounts[1].present
          - ib_cap is not changed and node_live is not changed

    - name: Save the results for the test
      ansible.builtin.copy:
        content: "{{{{ {{'ib_cap': ib_cap.ib, 'ib_live': ib_live.ib, 'node_cap': node_cap.node,
                    'node_live': node_live.node}} | to_json }}}}"
        dest: "{out}"
        mode: "0644"
"""


def _real_root(dest):
    shutil.copytree(REAL_LAYOUT, dest)
    with open(os.path.join(REAL_LAYOUT, "links.txt"), encoding="utf-8") as fh:
        for line in fh:
            if " -> " in line and not line.startswith("#"):
                link, target = line.strip().split(" -> ")
                os.makedirs(os.path.dirname(os.path.join(dest, link)), exist_ok=True)  # git keeps no empty dir
                os.symlink(target, os.path.join(dest, link))
    return dest


def test_playbook(tmp_path):
    cap = tmp_path / "cap"
    shutil.copytree(os.path.join(FIX, "sysfs-infiniband", "gpud-h100-8x-cx7-tree"), str(cap / "sys/class/infiniband"))
    shutil.copy(os.path.join(FIX, "ibstat", "gpud-h100-cx7-ib-some-down.txt"), str(cap / "ibstat.txt"))
    (cap / "capture.json").write_text(json.dumps({"captured_at": "2026-12-02T10:00:00Z", "boot_id": "cap-boot-1"}))
    (cap / "node.json").write_text(
        json.dumps({"hostname": "gpu-node-07", "boot_id": "cap-boot-1", "fabric_manager_version": "535.161.08"})
    )
    real = _real_root(str(tmp_path / "root"))
    out = tmp_path / "out.json"
    pb = tmp_path / "play.yml"
    pb.write_text(PLAY.format(cap=cap, real=real, out=out))
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text("[defaults]\nretry_files_enabled = False\n")
    env = dict(os.environ)
    env.update(
        PATH=BIN + os.pathsep + env.get("PATH", ""),
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build"),
        ANSIBLE_CONFIG=str(cfg),
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_NOCOLOR="1",
    )
    t0 = time.monotonic()
    # "-i localhost," on the command line: ANSIBLE_INVENTORY="localhost," would add "" = the cwd as an inventory
    # directory, and from the repository root ansible-core then walks the tree through build/'s link loop.
    proc = subprocess.run(
        [PLAYBOOK, "-i", "localhost,", "-c", "local", str(pb)],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert time.monotonic() - t0 < 120
    res = json.loads(out.read_text())
    assert res["ib_cap"]["collected_at"] == 1796205600.0
    assert res["ib_live"]["boot_id"] == "3b0fca2e-5c0e-4c1f-9a52-0d9d6e0f1a11"
    assert res["node_cap"]["mounts"][0] == {
        "path": "/lustre",
        "present": None,
        "responsive": None,
        "fstype": None,
        "free_pct": None,
        "error": "not in the capture",
    }
    assert set(res["node_live"]["services"]) == {"nvidia-fabricmanager"}
