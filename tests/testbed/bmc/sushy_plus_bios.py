"""sushy_plus: BIOS attributes for the fake driver (the stock one answers "Not implemented"), with the pending-settings
semantics of real BMCs: ``PATCH Systems/<id>/BIOS/Settings`` stores the attributes as *pending*; they become the
current ``Systems/<id>/BIOS`` Attributes only at the next ``ComputerSystem.Reset`` of that system (issue 18: the
configuration backup reads them, a restore writes them back). State: ``bios`` in plus-state.json."""

import re

import flask
from sushy_plus_state import LOCK, _load, _name, _save, app
from sushy_tools.emulator.resources.systems import fakedriver

DEFAULT_ATTRIBUTES = {
    "BootMode": "Uefi",
    "ProcVirtualization": "Enabled",
    "SriovGlobalEnable": "Enabled",
    "NumaNodesPerSocket": "1",
    "PcieAspm": "Disabled",
}


def _bios(st, system):
    b = st.setdefault("bios", {}).setdefault(system, {})
    b.setdefault("current", dict(DEFAULT_ATTRIBUTES))
    b.setdefault("pending", {})
    return b


def _get_bios(self, identity):
    with LOCK:
        return dict(_bios(_load(), app.systems.name(identity))["current"])


def _set_bios(self, identity, attributes):
    with LOCK:
        st = _load()
        _bios(st, app.systems.name(identity))["pending"].update(attributes or {})
        _save(st)


def _reset_bios(self, identity):
    with LOCK:
        st = _load()
        _bios(st, app.systems.name(identity))["pending"] = dict(DEFAULT_ATTRIBUTES)
        _save(st)


fakedriver.FakeDriver.get_bios = _get_bios
fakedriver.FakeDriver.set_bios = _set_bios
fakedriver.FakeDriver.reset_bios = _reset_bios


@app.route("/emulator/bios/<system>", methods=["GET"])
def bios_state(system):
    """Test-only: current and pending attributes of a system (by name or UUID)."""
    with LOCK:
        return flask.jsonify(_bios(_load(), _name(system)))


@app.after_request
def _apply_pending_bios_on_reset(resp):
    m = re.match(r"^/redfish/v1/Systems/([^/]+)/Actions/ComputerSystem.Reset/?$", flask.request.path)
    if m and flask.request.method == "POST" and 200 <= resp.status_code < 300:
        with LOCK:
            st = _load()
            b = _bios(st, _name(m.group(1)))
            if b["pending"]:
                b["current"].update(b["pending"])
                b["pending"] = {}
                _save(st)
    return resp
