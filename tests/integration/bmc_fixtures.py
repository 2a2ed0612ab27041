"""Session-scoped pytest fixtures for the BMC emulators (tests/testbed/bmc/bmc.sh).

tests/integration/conftest.py loads this module's fixtures into its namespace: a test just names
``bmc_emulators`` as a parameter (no import).
``BMCs`` also throws the emulators' fault switches (refuse power-off, stall a Redfish path, die mid-update, hang):
see tests/testbed/bmc/README.md "Fault switches".
When ``bmc.sh up`` already runs with its defaults (tests/testbed/run-integration.sh starts it), that pair is
used and left running. Otherwise the session starts its own pair in its own work dir on free ports, so
parallel sessions do not collide, and ``bmc.sh down`` stops both by PID and removes the work dir.
GPUOPS_BMC_REUSE=0 always starts a private pair.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BMC_SH = os.path.join(ROOT, "tests", "testbed", "bmc", "bmc.sh")
USER = "admin"
PASSWORD = "Emul4tor-S3cret-pw"  # test-only: asserted absent from ansible -vvv output
DEFAULT_PASSWORD = "gpuops-Emul4ted-pw"  # bmc.sh's default


def free_port(avoid=()):
    for _unused in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        # the IPMI console listens on port + 1000; UDP port for RMCP+ must be free as well
        if port + 1000 < 65535 and port not in avoid and port + 1000 not in avoid:
            return port
    raise RuntimeError("no free port")


class BMCs:
    def __init__(self, work, rf_port, ipmi_port, password=PASSWORD, user=USER):
        self.work = work
        self.redfish_port = rf_port
        self.redfish_url = "https://127.0.0.1:%d" % rf_port
        self.ipmi_port = ipmi_port
        self.user = user
        self.password = password
        self.env = dict(os.environ, BMC_WORK=work, BMC_REDFISH_PORT=str(rf_port), BMC_IPMI_PORT=str(ipmi_port),
                        BMC_USER=user, BMC_PASSWORD=password)  # fmt: skip

    def sh(self, *args, timeout=180):
        return subprocess.run(
            ["bash", BMC_SH] + list(args), env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )

    def inject(self, command):
        """One ipmi_sim console command, e.g. ``sensor_set_bit 0x20 0 6 1 1 0``."""
        res = self.sh("inject", command, timeout=20)
        assert res.returncode == 0, res.stderr

    # -- fault switches (tests/testbed/bmc/README.md "Fault switches") -----------------------------------------
    def _ok(self, *args):
        res = self.sh(*args, timeout=60)
        assert res.returncode == 0, "bmc.sh %s: %s%s" % (" ".join(args), res.stdout, res.stderr)
        return res.stdout

    def redfish_switch(self, **switches):
        """POST /emulator/switches: ``refuse_power="<BMC message>"``, ``stall=["/redfish/v1/..."]``,
        ``die_on_update=0`` (or N polls of the task), ``stall_seconds``, ``refuse_power_types``."""
        return json.loads(self._ok("redfish-switch", json.dumps(switches)))

    def refuse_power_off(self, message="Power action denied: the chassis is locked by a service operation"):
        """Both BMCs refuse power-off: Redfish ComputerSystem.Reset answers 409 with ``message``, IPMI
        ``chassis power off`` fails with a completion-code error."""
        self.redfish_switch(refuse_power=message)
        self._ok("ipmi-refuse-power", message)

    def freeze(self, which):
        """``ipmi`` or ``redfish``: SIGSTOP, the BMC hangs (packets/connections are queued, never answered)."""
        self._ok("freeze", which)

    def thaw(self, which):
        self._ok("thaw", which)

    def redfish_alive(self):
        return "redfish: up" in self.sh("status", timeout=60).stdout

    def clear_switches(self):
        """Every switch lifted: thawed, power-off allowed, no stall; a Redfish emulator that died is started
        again (``bmc.sh up``, fresh Redfish state)."""
        for which in ("ipmi", "redfish"):
            self.sh("thaw", which, timeout=30)
        self.sh("ipmi-refuse-power", "off", timeout=30)
        if self.sh("redfish-switch", "clear", timeout=30).returncode != 0:
            self._ok("up")

    @contextlib.contextmanager
    def switched(self, **switches):
        """``with bmc_emulators.switched(stall=[...]):`` Redfish switches for the block, all lifted afterwards."""
        self.redfish_switch(**switches)
        try:
            yield self
        finally:
            self.clear_switches()


def _running_default():
    """The pair ``bmc.sh up`` started with its defaults (e.g. by run-integration.sh), or None."""
    if os.environ.get("GPUOPS_BMC_REUSE", "1") == "0":
        return None
    res = subprocess.run(["bash", BMC_SH, "status"], capture_output=True, text=True, timeout=60, check=False)
    if res.returncode != 0:
        return None
    env = dict(
        line.split("=", 1)
        for line in subprocess.run(
            ["bash", BMC_SH, "env"], capture_output=True, text=True, timeout=30, check=False
        ).stdout.split()
        if "=" in line
    )
    return BMCs(
        env["BMC_WORK"],
        int(env["BMC_REDFISH_PORT"]),
        int(env["BMC_IPMI_PORT"]),
        password=os.environ.get("BMC_PASSWORD", DEFAULT_PASSWORD),
        user=env["BMC_USER"],
    )


@pytest.fixture(scope="session")
def bmc_emulators(tmp_path_factory):
    for tool in ("ipmi_sim", "ipmitool", "sdrcomp", "openssl", "curl"):
        if shutil.which(tool) is None:
            pytest.skip("%s not installed (tests/testbed/deps.sh installs openipmi, ipmitool)" % tool)
    shared = _running_default()
    if shared is not None:
        yield shared
        return
    work = str(tmp_path_factory.mktemp("bmc"))
    rf = free_port()
    ipmi = free_port(avoid=(rf, rf + 1000))
    bmcs = BMCs(work, rf, ipmi)
    res = bmcs.sh("up")
    if res.returncode != 0:
        bmcs.sh("down", timeout=60)
        pytest.fail("bmc.sh up failed:\n%s\n%s" % (res.stdout, res.stderr))
    try:
        yield bmcs
    finally:
        bmcs.sh("down", timeout=60)
