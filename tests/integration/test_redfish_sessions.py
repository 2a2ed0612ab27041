"""Redfish session auth and ca_path against the emulator with sessions on (tests/testbed/bmc, issue 14).

The emulator (sushy-tools + sushy_plus_sessions.py) counts the requests it authenticated each way
(GET /emulator/sessions): a session walk must send no Basic auth at all, and leave no session behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import pytest
from bmc_fixtures import ROOT

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import bmc as _bmc
from ansible_collections.gpuops.cluster.plugins.module_utils._http import Http, HttpError

pytestmark = pytest.mark.emulators


def _admin(b):
    return Http(b.redfish_url, b.user, b.password, validate_certs=False, timeout=10, auth="basic")


def _counters(b, reset=False):
    """The emulator's session counters, minus the one Basic request that reads them."""
    r = _admin(b).request("DELETE" if reset else "GET", "/emulator/sessions")
    assert r.status == 200, r.text
    doc = dict(r.json)
    doc["basic"] -= 1
    return doc


def _play(tmp_path, module, args):
    out = tmp_path / ("%s.json" % module)
    pb = tmp_path / ("%s.yml" % module)
    pb.write_text(
        textwrap.dedent(
            """\
            - hosts: localhost
              gather_facts: false
              vars:
                ansible_python_interpreter: "{{ ansible_playbook_python }}"
              tasks:
                - name: Call the module
                  gpuops.cluster.%s: %s
                  register: __r
                  ignore_errors: true
                - name: Save
                  ansible.builtin.copy:
                    content: "{{ __r | to_json }}"
                    dest: %s
                    mode: "0600"
            """
        )
        % (module, json.dumps(args), out)
    )
    bin_dir = os.path.join(ROOT, ".venv", "bin")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build"), ANSIBLE_NOCOLOR="1",
               PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))  # fmt: skip
    res = subprocess.run(
        [os.path.join(bin_dir, "ansible-playbook"), "-i", "localhost,", "-c", "local", "-vvv", str(pb)],
        env=env, capture_output=True, text=True, timeout=300, cwd=str(tmp_path), check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return json.loads(out.read_text()), res.stdout + res.stderr


def test_emulator_has_a_session_service(bmc_emulators):
    b = bmc_emulators
    root = Http(b.redfish_url, validate_certs=False, timeout=10).get_json("/redfish/v1")
    assert root["Links"]["Sessions"]["@odata.id"] == "/redfish/v1/SessionService/Sessions"
    # without credentials nothing but the root; a made-up token is refused
    anon = Http(b.redfish_url, validate_certs=False, timeout=10)
    assert anon.request("GET", "/redfish/v1/Systems").status == 401
    assert anon.request("GET", "/redfish/v1/Systems", headers={"X-Auth-Token": "0" * 32}).status == 401


def test_bmc_info_walks_with_one_session_and_no_basic_auth(tmp_path, bmc_emulators):
    b = bmc_emulators
    _counters(b, reset=True)
    args = {"bmc_host": "127.0.0.1", "port": b.redfish_port, "bmc_user": b.user, "bmc_password": b.password,
            "protocol": "redfish", "auth": "session", "ca_path": os.path.join(b.work, "bmc.crt")}  # fmt: skip
    res, out = _play(tmp_path, "bmc_info", args)
    bmc = res["bmc"]
    assert bmc["source"] == "redfish" and bmc["errors"] == [], bmc["errors"]
    assert len(bmc["redfish"]["firmware"]) >= 18 and bmc["redfish"]["systems"]
    c = _counters(b)
    assert c["created"] == 1 and c["deleted"] == 1 and c["active"] == 0, c  # logged out at the end
    assert c["basic"] == 0 and c["token"] >= 20, c  # every request on the token
    assert b.password not in out  # -vvv output


@pytest.mark.parametrize("auth, used", [("auto", "session"), ("basic", "basic")])
def test_auto_picks_the_session_service_basic_opens_none(bmc_emulators, auth, used):
    b = bmc_emulators
    _counters(b, reset=True)
    with Http(b.redfish_url, b.user, b.password, validate_certs=False, timeout=10, auth=auth) as h:
        for path in ("/redfish/v1/Systems", "/redfish/v1/Chassis", "/redfish/v1/Managers"):
            assert h.get_json(path)["Members"]
        assert h.auth_used == used
    c = _counters(b)
    if used == "session":
        assert (c["created"], c["deleted"], c["token"], c["basic"]) == (1, 1, 4, 0), c  # 3 GETs + the logout
    else:
        assert (c["created"], c["token"], c["basic"]) == (0, 0, 3), c


def test_wrong_password_fails_the_login_and_is_not_retried_with_basic(bmc_emulators):
    b = bmc_emulators
    _counters(b, reset=True)
    r = _bmc.collect(mode="redfish", host="127.0.0.1", port=b.redfish_port, user=b.user, password="not-it-x",
                     validate_certs=False, timeout=10)  # fmt: skip
    assert [e["kind"] for e in r["errors"]] == ["tool_error"]
    assert "session login failed (HTTP 401" in r["errors"][0]["message"]
    c = _counters(b)
    assert c["failed_logins"] == 1 and c["basic"] == 0 and c["created"] == 0, c


def test_ca_path_verifies_the_bmc_certificate(bmc_emulators, tmp_path):
    b = bmc_emulators
    ca = os.path.join(b.work, "bmc.crt")
    with Http(b.redfish_url, b.user, b.password, ca_path=ca, timeout=10) as h:  # validate_certs on
        assert h.get_json("/redfish/v1/Systems")["Members"]
        assert h.auth_used == "session"
    # the system trust store does not know the emulator's self-signed certificate
    with pytest.raises(HttpError, match="CERTIFICATE_VERIFY_FAILED"):
        Http(b.redfish_url, b.user, b.password, timeout=10).get_json("/redfish/v1/Systems")
    # another CA: refused as well
    other = tmp_path / "other.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(tmp_path / "k"),
                    "-out", str(other), "-days", "1", "-subj", "/CN=other"], check=True, capture_output=True)  # fmt: skip
    with pytest.raises(HttpError, match="CERTIFICATE_VERIFY_FAILED"):
        Http(b.redfish_url, b.user, b.password, ca_path=str(other), timeout=10).get_json("/redfish/v1/Systems")
    with pytest.raises(HttpError, match="is not a file"):
        Http(b.redfish_url, ca_path=str(tmp_path / "missing.pem"))


def test_firmware_update_module_logs_in_once_and_out(tmp_path, bmc_emulators):
    b = bmc_emulators
    _counters(b, reset=True)
    args = {"url": b.redfish_url, "user": b.user, "password": b.password, "ca_path": os.path.join(b.work, "bmc.crt"),
            "auth": "session", "reset_type": "ForceRestart", "system_id": "00000000-0000-0000-0000-000000000002"}  # fmt: skip
    res, out = _play(tmp_path, "redfish_firmware_update", args)
    assert not res.get("failed"), res
    assert res["changed"] and res["reset"]["sequence"] == ["ForceRestart"]
    c = _counters(b)
    assert c["created"] == 1 and c["deleted"] == 1 and c["basic"] == 0, c
    # a failure (unknown system) still logs out
    _counters(b, reset=True)
    res, out = _play(tmp_path, "redfish_firmware_update", dict(args, system_id="no-such-system"))
    assert res.get("failed") and "HTTP 404" in res["msg"], res
    c = _counters(b)
    assert c["created"] == 1 and c["deleted"] == 1 and c["active"] == 0, c
    assert b.password not in out
