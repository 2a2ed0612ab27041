# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Back up before every change (issue 18) on the test bed: real nodes, real Slurm, the Redfish emulator.

* an upgrade snapshots each node first (a ``backup`` audit record before the flash) and refuses the node whose
  firmware image's SHA-256 differs from the baseline (fake nvfwupd: never called, node not drained);
* Slurm and driver configuration changed on a node, plus a BIOS attribute changed through the BMC, come back
  byte-identical (sha256, mode) through ``gpuops.cluster.restore``; check mode shows the diff first, writes nothing;
* a tampered snapshot is refused naming the file, and nothing is written;
* issue 35: the issue's attack on a real snapshot (entries for /root/.ssh/authorized_keys 0600 and
  /usr/local/bin/rootsh 4755 root appended, the manifest's SHA-256 recomputed) is refused by the restore playbook and
  neither file appears on the node; a state directory whose ticket holds ansible-runner artifacts with a planted
  password is backed up and copied off-site without that value in any written file.
"""

from __future__ import annotations

import hashlib
import json
import ssl
import subprocess
import urllib.request
from base64 import b64encode
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAKES = ROOT / "tests" / "testbed" / "fakes"
GOOD = b"HGX-H100x8 firmware package 96.00.99.00.01 (test bed)\n"
IMAGE = "/opt/fw/nvfw_HGX-H100x8_96.00.99.00.01.fwpkg"
NEW_VBIOS = "96.00.99.00.01"
FILES = ("/etc/slurm/gres.conf", "/etc/slurm/slurm.conf", "/etc/modprobe.d/nvidia.conf")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Bed:
    """ansible-playbook runs with the audit callback and one state directory per test."""

    def __init__(self, testbed, tmp_path, bmc=None):
        self.tb, self.tmp, self.bmc = testbed, tmp_path, bmc
        self.state = tmp_path / "state"
        self.env = dict(testbed.env, ANSIBLE_CALLBACKS_ENABLED="gpuops.cluster.audit", GPUOPS_STATE_DIR=str(self.state),
                        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
                        GPUOPS_BACKUP_KEY_FILE=str(tmp_path / "keys" / "backup.key"))  # fmt: skip
        if bmc is not None:
            self.env["GPUOPS_BMC_PASSWORD"] = bmc.password

    def play(self, playbook, extra, *args, timeout=180):
        (self.tmp / "extra.json").write_text(json.dumps(extra))
        cmd = ["ansible-playbook", "-i", str(self.tb.inventory)] + [str(a) for a in args]
        cmd += [str(ROOT / "playbooks" / playbook), "-e", "@%s" % (self.tmp / "extra.json")]
        proc = subprocess.run(cmd, env=self.env, cwd=str(ROOT), capture_output=True, text=True, timeout=timeout,
                              check=False)
        (self.tmp / ("%s.log" % playbook)).write_text(proc.stdout + proc.stderr)  # kept with pytest's tmp_path
        return proc.returncode, proc.stdout + proc.stderr

    def audit(self):
        path = self.state / "audit" / "audit.log"
        return [json.loads(ln) for ln in path.read_text().splitlines() if ln.startswith("{")] if path.exists() else []

    def outcome(self, workflow):
        runs = sorted((self.state / "runs" / workflow).glob("*.json"))
        return json.loads(runs[-1].read_text())

    def digest(self, host, path):
        out = self.tb.on_node(host, "sh", "-c", "sha256sum %s | cut -c1-64; stat -c %%a %s" % (path, path)).stdout.split()
        return out[0], out[1]


@pytest.fixture(scope="module")
def nodes(testbed):
    hosts = testbed.nodes[5:8]
    script = ("mkdir -p /opt/fw /etc/modprobe.d; for t in nvfwupd; do printf '#!/bin/sh\\nexec /usr/bin/python3 %s/%%s"
              " \"$@\"\\n' $t > /usr/local/bin/$t; chmod 755 /usr/local/bin/$t; done;"
              " printf 'options nvidia NVreg_DeviceFileMode=0660\\n' > /etc/modprobe.d/nvidia.conf;"
              " chmod 644 /etc/modprobe.d/nvidia.conf" % FAKES)  # fmt: skip
    saved = {}
    for h in hosts:
        testbed.on_node(h, "sh", "-c", script)
        saved[h] = {f: testbed.on_node(h, "cat", f).stdout for f in FILES[:2]}
    yield hosts
    for h in hosts:
        for f, text in saved[h].items():
            subprocess.run(["bash", str(ROOT / "tests/testbed/testbed.sh"), "node", h, "sh", "-c", "cat > %s" % f],
                           input=text, text=True, env=testbed.env, check=False, timeout=30)  # fmt: skip
        testbed.on_node(h, "rm", "-f", IMAGE, "/etc/modprobe.d/nvidia.conf", check=False)


def _windows(tmp_path):
    import datetime

    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    w = [{"name": "backup-test", "start": (now - datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M"),
          "end": (now + datetime.timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M"), "timezone": "UTC"}]  # fmt: skip
    (tmp_path / "windows.json").write_text(json.dumps(w))
    return str(tmp_path / "windows.json")


def test_upgrade_backs_up_first_and_never_flashes_a_corrupted_image(testbed, nodes, tmp_path):
    good, bad = nodes[0], nodes[1]
    testbed.on_node(good, "sh", "-c", "printf '%s' > %s" % (GOOD.decode().strip() + "\\n", IMAGE))
    testbed.on_node(bad, "sh", "-c", "printf 'corrupted\\n' > %s" % IMAGE)
    bed = Bed(testbed, tmp_path)
    inv = tmp_path / "group.yml"
    inv.write_text(json.dumps({"all": {"children": {"backup_test": {"hosts": {good: {}, bad: {}},
                   "vars": {"gpuops_node_class": "h100-sxm-8", "gpuops_partition": "gpu"}}}}}))  # fmt: skip
    extra = {
        "gpuops_targets": "backup_test", "gpuops_allow_target_patterns": True, "gpuops_change_id": "CHG-BK-1", "upgrade_run_dir": str(tmp_path / "run"),
        "gpuops_maintenance_windows": "{{ lookup('file', '%s') | from_json }}" % _windows(tmp_path),
        "gpuops_upgrade_baseline": {"h100-sxm-8": {"vbios": NEW_VBIOS, "images": {"vbios": {"sha256": sha(GOOD)}}}},
        "gpuops_upgrade_methods": {"h100-sxm-8": {"vbios": {"activation": "none", "est_duration_s": 30}}},
        "gpuops_upgrade_constraints": {"max_offline_share": 0.7, "max_per_rack": 2, "canary_size": 1},
        "gpuops_isolation_guard": {"max_share_partition": 0.5, "max_share_cluster": 0.5, "max_share_rack": 1.0},
        "upgrade_images": {"vbios": "/opt/fw/nvfw_HGX-H100x8_{version}.fwpkg"},
        "upgrade_health_gate": False, "upgrade_post_inspection": False, "upgrade_consumers": [],
        "upgrade_collect_domains": ["gpu", "node"], "upgrade_tool_timeout": 8, "upgrade_drain_timeout": 6,
        "upgrade_batch_margin_seconds": 0, "gpuops_slurm_conf_path": str(testbed.root / "slurm" / "slurm.conf"),
    }  # fmt: skip
    # the group is a pattern: the operator's flag on the command line (issue 35, targets are hosts)
    rc, out = bed.play("upgrade.yml", extra, "-i", inv, "-e", "gpuops_allow_target_patterns=true", timeout=240)
    outcome = bed.outcome("upgrade")
    assert {h: n["outcome"] for h, n in outcome["nodes"].items()} == {good: "done", bad: "refused"}, out[-4000:]
    assert rc == 2
    # the corrupted image was never flashed, the node never drained
    assert "never flashed" in outcome["nodes"][bad]["error"] and sha(b"corrupted\n") in outcome["nodes"][bad]["error"]
    assert {g["vbios"] for g in testbed.load_state(bad)["gpus"]} != {NEW_VBIOS}
    assert {g["vbios"] for g in testbed.load_state(good)["gpus"]} == {NEW_VBIOS}
    assert "DRAIN" not in testbed.node_state(bad)
    audit = bed.audit()
    flashes = [r for r in audit if r["event"] == "task" and "Flash the GPUs" in (r.get("task") or "")
               and r.get("status") == "ok"]  # fmt: skip
    assert [r["host"] for r in flashes] == [good]
    backups = {r["host"]: r for r in audit if r["event"] == "backup"}
    assert backups[good]["ok"] and backups[bad]["ok"] and backups[good]["change_id"] == "CHG-BK-1"
    assert backups[good]["seq"] < flashes[0]["seq"]  # the snapshot came first
    # the snapshot is named, with the restore command, in the node record and the outcome
    rec = json.loads((tmp_path / "run" / "nodes" / ("%s.json" % good)).read_text())
    sid = rec["backup"]["id"]
    assert rec["backup"]["verified"] and "gpuops_backup_id=%s -l %s" % (sid, good) in outcome["nodes"][good]["detail"]
    man = json.loads((bed.state / "backups" / "snapshots" / sid / "manifest.json").read_text())
    files = {f["file"]: f for f in man["files"]}
    assert man["schema"] == "gpuops.backup/v2" and man["change_id"] == "CHG-BK-1" and man["workflow"] == "upgrade"
    assert {"files/etc/slurm/gres.conf", "files/etc/modprobe.d/nvidia.conf", "controller/slurm.conf"} <= set(files)
    assert files["files/etc/slurm/gres.conf"]["sha256"] == bed.digest(good, "/etc/slurm/gres.conf")[0]


@pytest.fixture()
def bios(bmc_emulators):
    b = bmc_emulators
    ctx = ssl._create_unverified_context()  # noqa: S323 - the emulator's self-signed certificate, test only
    auth = "Basic " + b64encode(("%s:%s" % (b.user, b.password)).encode()).decode()

    def call(path, method="GET", body=None):
        req = urllib.request.Request(b.redfish_url + path, method=method, headers={"Authorization": auth,
                                     "Content-Type": "application/json"}, data=json.dumps(body).encode() if body else None)  # fmt: skip
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:  # noqa: S310 - https to the emulator
            data = r.read()
        return json.loads(data) if data else None

    system = call("/redfish/v1/Systems")["Members"][0]["@odata.id"]
    return b, call, system


def test_restore_is_byte_identical_after_a_check_mode_diff(testbed, nodes, tmp_path, bios):
    bmc, call, system = bios
    host = nodes[2]
    bed = Bed(testbed, tmp_path, bmc)
    common = {"gpuops_slurm_conf_path": str(testbed.root / "slurm" / "slurm.conf"),
              "gpuops_backup_bmc": {"url": bmc.redfish_url, "user": bmc.user, "validate_certs": False}}  # fmt: skip
    before = {f: bed.digest(host, f) for f in FILES}
    boot_mode = call(system + "/BIOS")["Attributes"]["BootMode"]
    rc, out = bed.play("backup.yml", dict(common, gpuops_change_id="CHG-BK-2"), "-l", "%s,localhost" % host)
    assert rc == 0, out[-3000:]
    assert bmc.password not in out
    sid = bed.outcome("backup")["nodes"][host]["detail"].split(":", 1)[0]
    man = json.loads((bed.state / "backups" / "snapshots" / sid / "manifest.json").read_text())
    assert "redfish/bios.json" in {f["file"] for f in man["files"]}
    assert bmc.password not in json.dumps(man)
    # the change: Slurm and driver configuration on the node, a BIOS attribute through the BMC (applied at reset)
    testbed.on_node(host, "sh", "-c", "echo '# changed' >> /etc/slurm/gres.conf; echo '# SlurmctldDebug=debug5' >> /etc/slurm/slurm.conf;"
                    " echo 'options nvidia NVreg_EnableGpuFirmware=0' > /etc/modprobe.d/nvidia.conf;"
                    " chmod 600 /etc/modprobe.d/nvidia.conf")  # fmt: skip
    call(system + "/BIOS/Settings", "PATCH", {"Attributes": {"BootMode": "Legacy" if boot_mode == "Uefi" else "Uefi"}})
    call(system + "/Actions/ComputerSystem.Reset", "POST", {"ResetType": "ForceRestart"})
    changed = {f: bed.digest(host, f) for f in FILES}
    assert all(changed[f] != before[f] for f in FILES)
    # check mode: the diff, nothing written
    rc, out = bed.play("restore.yml", dict(common, gpuops_backup_id=sid), "-l", host, "--check", "--diff")
    assert rc == 0, out[-3000:]
    assert "-# changed" in out and "-options nvidia NVreg_EnableGpuFirmware=0" in out and "+options nvidia NVreg_DeviceFileMode" in out
    assert {f: bed.digest(host, f) for f in FILES} == changed
    # the restore: byte-identical, mode too; the BIOS attribute is pending until the next reset
    rc, out = bed.play("restore.yml", dict(common, gpuops_backup_id=sid), "-l", host, "--diff")
    assert rc == 0, out[-3000:]
    assert {f: bed.digest(host, f) for f in FILES} == before
    assert {f: before[f][0] for f in FILES} == {f: m["sha256"] for m in man["files"] for f in FILES if m.get("path") == f}
    state = call("/emulator/bios/%s" % system.rsplit("/", 1)[1])
    assert state["pending"] == {"BootMode": boot_mode}
    res = bed.outcome("restore")
    assert res["nodes"][host]["outcome"] == "done" and "/etc/slurm/gres.conf" in res["nodes"][host]["detail"]
    assert any(r["event"] == "outcome" and r.get("workflow") == "restore" for r in bed.audit())
    # a drill restores the snapshot into a scratch directory and reports RTO/RPO figures
    rc, out = bed.play("restore_drill.yml", {"gpuops_drill_nodes": [host]})
    assert rc == 0, out[-3000:]
    drill = json.loads(next((bed.state / "drills").glob("drill-*.json")).read_text())
    (r,) = drill["restores"]
    assert drill["ok"] and r["id"] == sid and r["ok"] and r["rto_ok"] and r["rpo_ok"] and r["files"] == len(man["files"])
    assert drill["rto_seconds"] == 1800 and drill["rpo_hours"] == 24 and 0 <= r["data_age_hours"] < 1
    assert "| %s | %s |" % (host, sid) in next((bed.state / "drills").glob("drill-*.md")).read_text()
    # the inspection: once the snapshot ages out of the policy, backup.stale (fresh: no finding, unit-tested)
    for hours, want in ((0.0001, {"backup.stale"}),):
        rc, out = bed.play("inspect.yml", {"gpuops_targets": host, "gpuops_report_dir": str(tmp_path / "report"),
                           "inspect_domains": ["node"], "gpuops_policy_overrides": {"backup": {"stale_hours": hours}}})  # fmt: skip
        report = json.loads((tmp_path / "report" / "report.json").read_text())
        got = {f["check"] for f in report["nodes"][host]["findings"] if f["check"].startswith("backup.")}
        assert got == want, out[-3000:]
    # a tampered snapshot is refused naming the file; nothing is written
    testbed.on_node(host, "sh", "-c", "echo '# changed again' >> /etc/slurm/gres.conf")
    gres = [f for f in man["files"] if f["file"] == "files/etc/slurm/gres.conf"][0]
    obj = bed.state / "backups" / "objects" / gres["sha256"]
    obj.write_bytes(obj.read_bytes() + b"# tampered\n")
    rc, out = bed.play("restore.yml", dict(common, gpuops_backup_id=sid), "-l", host)
    assert rc == 2, out[-3000:]
    res = bed.outcome("restore")["nodes"][host]
    assert res["outcome"] == "refused" and "files/etc/slurm/gres.conf (checksum mismatch" in res["error"]
    assert "# changed again" in testbed.on_node(host, "cat", "/etc/slurm/gres.conf").stdout
    obj.write_bytes(obj.read_bytes()[: -len(b"# tampered\n")])
    _a_destination_link_is_never_written_through(bed, testbed, host, sid, common)
    _the_issue_attack_is_refused(bed, testbed, host, sid, common)


def _a_destination_link_is_never_written_through(bed, testbed, host, sid, common):
    """Issue 35: a restorable file whose destination on the node is now a symbolic link: the restore refuses before
    writing anything, and neither the link nor its target changes."""
    conf = "/etc/modprobe.d/nvidia.conf"
    testbed.on_node(host, "sh", "-c", "mv %s /tmp/nvidia.conf.saved; echo target > /tmp/link-target; ln -s "
                    "/tmp/link-target %s" % (conf, conf))  # fmt: skip
    try:
        rc, out = bed.play("restore.yml", dict(common, gpuops_backup_id=sid), "-l", host)
        assert rc == 2, out[-3000:]
        res = bed.outcome("restore")["nodes"][host]
        assert "%s on the node is a symbolic link or not a regular file; nothing was written" % conf in res["error"], res
        probe = testbed.on_node(host, "sh", "-c", "readlink %s; cat /tmp/link-target" % conf).stdout
        assert probe == "/tmp/link-target\ntarget\n", probe
    finally:
        testbed.on_node(host, "sh", "-c", "rm -f %s /tmp/link-target; mv /tmp/nvidia.conf.saved %s" % (conf, conf))


def _the_issue_attack_is_refused(bed, testbed, host, sid, common):
    """Issue 35: the issue's attack on a real snapshot (root files appended, the plain SHA-256 recomputed) is refused
    by the restore playbook, and nothing is written on the node."""
    probe = "for f in /root/.ssh/authorized_keys /usr/local/bin/rootsh; do stat -c '%n %s %Y' $f 2>&1; done; true"
    before = testbed.on_node(host, "sh", "-c", probe).stdout
    sdir = bed.state / "backups" / "snapshots" / sid
    doc = json.loads((sdir / "manifest.json").read_text())
    for path, mode, data in (("/root/.ssh/authorized_keys", "0600", b"ssh-ed25519 AAAA attacker\n"),
                             ("/usr/local/bin/rootsh", "4755", b"#!/bin/sh\nexec /bin/sh -p\n")):  # fmt: skip
        (bed.state / "backups" / "objects" / sha(data)).write_bytes(data)
        doc["files"].append({"file": "files" + path, "path": path, "source": path, "kind": "file", "sha256": sha(data),
                             "size": len(data), "mode": mode, "uid": 0, "gid": 0, "owner": "root", "group": "root",
                             "restore": True})  # fmt: skip
    body = (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()
    (sdir / "manifest.json").write_bytes(body)
    (sdir / "manifest.sha256").write_text(sha(body) + "\n")
    rc, out = bed.play("restore.yml", dict(common, gpuops_backup_id=sid), "-l", host)
    assert rc == 2, out[-3000:]
    res = bed.outcome("restore")["nodes"][host]
    assert res["outcome"] == "refused" and "is not authentic: manifest.sig does not match manifest.json" in res["error"]
    after = testbed.on_node(host, "sh", "-c", probe).stdout
    assert after == before and "/usr/local/bin/rootsh': No such file" in after, (before, after)


def test_state_backup_carries_no_runner_artifact_secret_here_or_offsite(testbed, nodes, tmp_path):
    """Issue 35, observation 3 (backup half): the ticket hook's runner artifacts hold GPUOPS_BMC_PASSWORD and the
    password of GPUOPS_DB_URL; the state snapshot (backup_include_state, the default) and its off-site copy do not."""
    host = nodes[0]
    bmc_pw, db_pw = "Planted-BMC-S3cret-pw", "Planted-DB-S3cret-pw"
    bed = Bed(testbed, tmp_path)
    bed.env.update(GPUOPS_BMC_PASSWORD=bmc_pw, GPUOPS_DB_URL="postgresql://gpuops:%s@db01/gpuops" % db_pw)
    art = bed.state / "tickets" / "OPS-9" / "runner" / "artifacts" / "x"
    art.mkdir(parents=True)
    (art / "command").write_text(json.dumps({"command": ["ansible-playbook", "gpuops.cluster.isolate"],
                                             "env": {"GPUOPS_BMC_PASSWORD": bmc_pw,
                                                     "GPUOPS_DB_URL": "postgresql://gpuops:%s@db01/gpuops" % db_pw}}))  # fmt: skip
    (bed.state / "tickets" / "OPS-9" / "runner" / "env").mkdir()
    (bed.state / "tickets" / "OPS-9" / "runner" / "env" / "envvars").write_text("GPUOPS_BMC_PASSWORD: %s\n" % bmc_pw)
    offsite = tmp_path / "offsite"
    extra = {"gpuops_slurm_conf_path": str(testbed.root / "slurm" / "slurm.conf"), "gpuops_backup_offsite": str(offsite)}
    rc, out = bed.play("backup.yml", extra, "-l", "%s,localhost" % host)
    assert rc == 0, out[-3000:]
    sid = bed.outcome("backup")["nodes"][host]["detail"].split(":", 1)[0]
    man = json.loads((bed.state / "backups" / "snapshots" / sid / "manifest.json").read_text())
    assert "controller/state/audit/audit.log" in {f["file"] for f in man["files"]}
    assert not [f for f in man["files"] if "/tickets/" in f["file"] or "runner" in f["file"]]
    assert (offsite / "snapshots" / sid / "manifest.sig").is_file()
    written = [p for root in (bed.state, offsite) for p in root.rglob("*") if p.is_file() and "tickets" not in p.parts]
    assert len(written) > 10
    for p in written:
        data = p.read_bytes()
        assert bmc_pw.encode() not in data and db_pw.encode() not in data, p


def test_redfish_image_with_a_differing_digest_is_refused_before_simple_update(tmp_path):
    """The BMC-fetched image (Redfish SimpleUpdate) is hashed on the controller before the drain: refused."""
    image = tmp_path / "bios-2.4.1.bin"
    image.write_bytes(b"BIOS 2.4.1 (corrupted in transit)\n")
    play = tmp_path / "digest.yml"
    for digest, want_rc in ((sha(b"BIOS 2.4.1\n"), 2), (sha(image.read_bytes()), 0)):
        play.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "vars": {
            "ansible_python_interpreter": "{{ ansible_playbook_python }}",
            "gpuops_node_class": "c1", "upgrade_state_dir": str(tmp_path / "state"), "upgrade_image_sha256": {},
            "upgrade_require_image_digest": False, "upgrade_images": {"bios": "file://%s/bios-{version}.bin" % tmp_path},
            "gpuops_upgrade_baseline": {"c1": {"bios": "2.4.1", "images": {"bios": {"sha256": digest}}}},
            "__upgrade_work": [{"component": "bios", "tool": "redfish_simple_update", "from": "2.1.7", "to": "2.4.1"}]},
            "tasks": [{"ansible.builtin.include_role": {"name": "gpuops.cluster.upgrade", "tasks_from": "digest.yml"}}]}]))  # fmt: skip
        proc = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", str(play)], cwd=str(ROOT),
                              capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        assert proc.returncode == want_rc, proc.stdout[-2000:]
        if want_rc:
            assert "sha256 %s, the baseline lists %s: refused, never flashed" % (sha(image.read_bytes()), digest) in proc.stdout
