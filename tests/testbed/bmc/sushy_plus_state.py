"""sushy_plus: the shared state file ($BMC_WORK/plus-state.json), the Flask app of sushy-tools with the fake
driver patched (no power delay, firmware versions from the state), Redfish document helpers, and the links
added to the stock Systems/Chassis documents."""

import json
import os
import random
import re
import threading

import flask
from sushy_tools.emulator import main as sushy_main
from sushy_tools.emulator.resources.systems import fakedriver

W = os.environ.get("BMC_WORK", "/tmp/gpuops-bmc")
STATE = os.path.join(W, "plus-state.json")
POLLS = int(os.environ.get("BMC_TASK_POLLS", "3"))
PAGE = 2
LOCK = threading.RLock()

COMPONENTS = ["BIOS", "BMC"] + ["GPU%d" % i for i in range(8)] + ["HCA%d" % i for i in range(8)]
DEFAULTS = {"BIOS": "2.1.7", "BMC": "1.12.3"}
DEFAULTS.update({"GPU%d" % i: "96.00.89.00.01" for i in range(8)})
DEFAULTS.update({"HCA%d" % i: "28.39.1002" for i in range(8)})
NAMES = {"BIOS": "BIOS", "BMC": "BMC Firmware"}
NAMES.update({"GPU%d" % i: "GPU%d VBIOS" % i for i in range(8)})
NAMES.update({"HCA%d" % i: "mlx5_%d Firmware" % i for i in range(8)})


class _NoDelay(random.Random):
    def randint(self, a, b):  # the fake driver's power apply_time = now + 0
        return 0


fakedriver.random = _NoDelay()
app = sushy_main.app


# ------------------------------------------------------------------------------------------ state


def _load():
    try:
        with open(STATE) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {"versions": {}, "pending": {}, "tasks": {}, "faults": {}, "log": [], "next_task": 1000}


def _save(st):
    tmp = STATE + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(st, fh, indent=1, sort_keys=True)
    os.replace(tmp, STATE)


def _systems():
    return [app.systems.name(u) for u in app.systems.systems]


def _name(identity):
    """System name for a URL identity (the fake driver serves systems by UUID; names redirect)."""
    try:
        return app.systems.name(identity)
    except Exception:  # noqa: BLE001 - unknown identity
        return identity


def _versions(st, system):
    v = dict(DEFAULTS)
    v.update(st["versions"].get(system, {}))
    return v


def _get_versions(self, identity):
    with LOCK:
        v = _versions(_load(), app.systems.name(identity))
    return {"BiosVersion": v["BIOS"], "BmcVersion": v["BMC"]}


def _set_versions(self, identity, firmware_versions):
    return None  # only SimpleUpdate below changes versions


fakedriver.FakeDriver.get_versions = _get_versions
fakedriver.FakeDriver.set_versions = _set_versions


def _odata(path, otype, **kw):
    d = {"@odata.id": path, "@odata.type": otype}
    d.update(kw)
    return d


def _collection(path, otype, members):
    return _odata(
        path,
        otype,
        Name=path.rsplit("/", 1)[-1],
        Members=[{"@odata.id": m} for m in members],
        **{"Members@odata.count": len(members)},
    )


def _not_found():
    return flask.jsonify({"error": {"code": "Base.1.0.ResourceMissingAtURI", "message": "not found"}}), 404


def _add_log(st, system, severity, message, sensor_type):
    entries = st["log"]
    entries.append(
        {
            "system": system,
            "Id": str(len(entries) + 1),
            "Severity": severity,
            "Message": message,
            "SensorType": sensor_type,
            "EntryCode": "Assert",
            "Created": "2026-12-02T10:00:%02dZ" % (len(entries) % 60),
        }
    )


# ------------------------------------------------------------------------------------------ patch stock JSON


@app.after_request
def _patch(resp):
    path = flask.request.path.rstrip("/")
    if flask.request.method != "GET" or resp.status_code != 200 or not resp.is_json:
        return resp
    m_sys = re.match(r"^/redfish/v1/Systems/([^/]+)$", path)
    m_ch = re.match(r"^/redfish/v1/Chassis/([^/]+)$", path)
    if not (m_sys or m_ch):
        return resp
    doc = resp.get_json()
    if m_sys:
        doc["Memory"] = {"@odata.id": path + "/Memory"}
        doc["LogServices"] = {"@odata.id": path + "/LogServices"}
        doc["SerialNumber"] = "SN-%s" % m_sys.group(1)
    if m_ch:
        for key in ("Power", "PowerSubsystem", "ThermalSubsystem", "Sensors"):
            doc[key] = {"@odata.id": "%s/%s" % (path, key)}
    resp.set_data(json.dumps(doc))
    return resp
