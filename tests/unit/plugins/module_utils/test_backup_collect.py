"""The node side of a snapshot (plugins/module_utils/_backup.py): files, globs, commands, Redfish, scrubbing."""

from __future__ import annotations

import base64
import json
import os

from ansible_collections.gpuops.cluster.plugins.module_utils import _backup as N
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command, which


def test_file_glob_absent_and_error(tmp_path):
    (tmp_path / "modprobe.d").mkdir()
    (tmp_path / "modprobe.d" / "nvidia.conf").write_bytes(b"options nvidia x=1\n")
    (tmp_path / "secret").write_text("s")
    os.chmod(tmp_path / "secret", 0o000)
    (tmp_path / "dir.conf").mkdir()
    src = [{"glob": str(tmp_path / "modprobe.d/*nvidia*")}, {"glob": str(tmp_path / "none/*.conf")},
           {"path": str(tmp_path / "missing")}, {"path": str(tmp_path / "dir.conf")}]  # fmt: skip
    out = N.collect(src, run_command, which)
    by = {e["source"]: e for e in out}
    ok = by[str(tmp_path / "modprobe.d/nvidia.conf")]
    assert ok["status"] == "ok" and base64.b64decode(ok["content"]) == b"options nvidia x=1\n" and ok["restore"]
    assert ok["sha256"] == N.sha256_hex(b"options nvidia x=1\n") and ok["size"] == 19 and ok["mode"] == "0644"
    assert by[str(tmp_path / "none/*.conf")]["status"] == "absent"
    assert by[str(tmp_path / "missing")]["status"] == "absent"
    assert by[str(tmp_path / "dir.conf")]["status"] == "error" and "not a regular file" in by[str(tmp_path / "dir.conf")]["error"]


def test_commands_absent_failed_and_ok(tmp_path):
    src = [{"name": "commands/none.txt", "argv": ["no-such-tool-gpuops"]},
           {"name": "commands/false.txt", "argv": ["sh", "-c", "echo boom >&2; exit 3"]},
           {"name": "commands/echo.txt", "argv": ["echo", "hi"]}]  # fmt: skip
    by = {e["name"]: e for e in N.collect(src, run_command, which)}
    assert by["commands/none.txt"]["status"] == "absent" and "not installed" in by["commands/none.txt"]["error"]
    assert by["commands/false.txt"]["status"] == "error" and by["commands/false.txt"]["error"] == "exit 3: boom"
    assert by["commands/echo.txt"]["status"] == "ok" and not by["commands/echo.txt"]["restore"]


def test_mlxconfig_per_device_and_hca_firmware(tmp_path):
    for dev, fw in (("mlx5_0", "28.39.1002"), ("mlx5_1", "28.39.1002")):
        (tmp_path / dev).mkdir()
        (tmp_path / dev / "fw_ver").write_text(fw + "\n")
    fw = N.hca_firmware("commands/hca-firmware.txt", str(tmp_path))
    assert base64.b64decode(fw["content"]).decode() == "mlx5_0 28.39.1002 -\nmlx5_1 28.39.1002 -\n"
    calls = []

    def runner(argv, timeout):
        calls.append(argv)

        class R:
            rc, stdout, stderr, error, timed_out = 0, "Configurations: SRIOV_EN True(1)\n", "", None, False

        return R()

    out = N.mlxconfig_entries("commands/mlxconfig", str(tmp_path), runner, lambda n: "/usr/bin/" + n, 5)
    assert [e["name"] for e in out] == ["commands/mlxconfig-mlx5_0.txt", "commands/mlxconfig-mlx5_1.txt"]
    assert calls == [["mlxconfig", "-d", "mlx5_0", "query"], ["mlxconfig", "-d", "mlx5_1", "query"]]
    none = N.mlxconfig_entries("commands/mlxconfig", str(tmp_path), runner, lambda n: None, 5)
    assert none[0]["status"] == "absent" and none[0]["error"] == "mlxconfig not installed"


def test_packages_are_filtered_to_what_a_change_touches():
    text = "bash\t5.2\tinstall ok installed\nnvidia-driver-535\t535.161.08\tinstall ok installed\nslurmd\t22.05\ti\n"
    e = N.with_content(N._entry("commands/packages.txt", "command: dpkg-query", "command", False), text.encode())
    kept = base64.b64decode(N.filter_packages(e)["content"]).decode()
    assert kept.splitlines() == ["nvidia-driver-535\t535.161.08\tinstall ok installed", "slurmd\t22.05\ti"]


class FakeHttp:
    def __init__(self, docs):
        self.docs = docs

    def get_json(self, path):
        if path not in self.docs:
            raise OSError("HTTP 404 for %s" % path)
        return self.docs[path]


def test_redfish_bios_and_manager_without_secrets():
    docs = {
        "/redfish/v1": {"Systems": {"@odata.id": "/redfish/v1/Systems"}},
        "/redfish/v1/Systems": {"Members": [{"@odata.id": "/redfish/v1/Systems/1"}]},
        "/redfish/v1/Systems/1": {"Bios": {"@odata.id": "/redfish/v1/Systems/1/BIOS"},
                                  "Links": {"ManagedBy": [{"@odata.id": "/redfish/v1/Managers/1"}]}},
        "/redfish/v1/Systems/1/BIOS": {"Attributes": {"BootMode": "Uefi", "AdminPassword": "hunter2"},
                                       "@Redfish.Settings": {"SettingsObject": {"@odata.id": "/redfish/v1/Systems/1/BIOS/Settings"}}},
        "/redfish/v1/Managers/1": {"Id": "1", "DateTime": "now", "NetworkProtocol": {"@odata.id": "/redfish/v1/Managers/1/NP"}},
    }  # fmt: skip
    out = {e["name"]: e for e in N.redfish_entries(FakeHttp(docs))}
    bios = json.loads(base64.b64decode(out["redfish/bios.json"]["content"]))
    assert bios["Attributes"] == {"BootMode": "Uefi"} and bios["settings_object"].endswith("/BIOS/Settings")
    assert "hunter2" not in json.dumps([e.get("content") and base64.b64decode(e["content"]).decode() for e in out.values()])
    assert "DateTime" not in json.loads(base64.b64decode(out["redfish/manager.json"]["content"]))
    assert out["redfish/network-protocol.json"]["status"] == "error" and "404" in out["redfish/network-protocol.json"]["error"]
    assert N.bios_changes({"BootMode": "Uefi", "Gone": 1}, {"BootMode": "Legacy"}) == {"BootMode": "Uefi"}
