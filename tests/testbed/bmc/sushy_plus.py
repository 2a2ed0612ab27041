"""sushy-emulator --fake, plus what the fake driver lacks for GPU-cluster tests (gpuops.cluster test bed).

In-process additions to sushy-tools 2.2.0 (no fork of its code):
  * /redfish/v1/UpdateService/FirmwareInventory[/<system>-<COMP>]: BIOS, BMC, GPU0..7, HCA0..7 per system
  * UpdateService.SimpleUpdate like real BMCs: 202 Accepted + Location of a TaskMonitor; the Task stays
    Running for BMC_TASK_POLLS polls, then Completed (or Exception when the ImageURI contains "fail").
    The new version is *pending* and becomes visible only after ComputerSystem.Reset of that system.
  * Systems/<id>/Memory (DIMM serials), Systems/<id>/LogServices/SEL/Entries (paginated, 2 per page)
  * Chassis/<id>/Power (legacy, PSU serials), PowerSubsystem/PowerSupplies, ThermalSubsystem/Fans,
    ThermalSubsystem/LeakDetection/LeakDetectors, Sensors (coolant: CoolantFlow LiquidFlow, CoolantPressure
    PressurekPa, CoolantSupplyTemp Temperature at LiquidInlet)
  * Fault injection (test-only, not Redfish): POST /emulator/faults {"psu": "PSU1", "psu_health": "Critical",
    "leak": "Critical", "coolant_flow": "Critical", "coolant_pressure": "Warning", "coolant_temp": "Critical"};
    DELETE /emulator/faults clears. Injected faults also add SEL log entries.
  * Power actions apply at once (the stock fake driver waits a random 1-11 s).
State: $BMC_WORK/plus-state.json (one file per run).
Run:  SUSHY_EMULATOR_CONFIG=sushy-fake.conf python sushy_plus.py --fake -i 127.0.0.1 -p 8443 --ssl-...
"""

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


# ------------------------------------------------------------------------------------------ systems


@app.route("/redfish/v1/Systems/<identity>/Memory", methods=["GET"])
def memory_collection(identity):
    base = "/redfish/v1/Systems/%s/Memory" % identity
    return flask.jsonify(
        _collection(base, "#MemoryCollection.MemoryCollection", ["%s/DIMM%d" % (base, i) for i in range(4)])
    )


@app.route("/redfish/v1/Systems/<identity>/Memory/<dimm>", methods=["GET"])
def memory(identity, dimm):
    if not re.match(r"^DIMM[0-3]$", dimm):
        return _not_found()
    return flask.jsonify(
        _odata(
            "/redfish/v1/Systems/%s/Memory/%s" % (identity, dimm),
            "#Memory.v1_17_0.Memory",
            Id=dimm,
            Name=dimm,
            CapacityMiB=65536,
            SerialNumber="DIMM-%s-%s" % (identity, dimm),
            PartNumber="HMCG94AGBRA181N",
            Status={"State": "Enabled", "Health": "OK"},
        )
    )


@app.route("/redfish/v1/Systems/<identity>/LogServices", methods=["GET"])
def log_services(identity):
    base = "/redfish/v1/Systems/%s/LogServices" % identity
    return flask.jsonify(_collection(base, "#LogServiceCollection.LogServiceCollection", [base + "/SEL"]))


@app.route("/redfish/v1/Systems/<identity>/LogServices/SEL", methods=["GET"])
def log_service(identity):
    base = "/redfish/v1/Systems/%s/LogServices/SEL" % identity
    return flask.jsonify(
        _odata(
            base,
            "#LogService.v1_3_0.LogService",
            Id="SEL",
            Name="System Event Log",
            Entries={"@odata.id": base + "/Entries"},
        )
    )


@app.route("/redfish/v1/Systems/<identity>/LogServices/SEL/Entries", methods=["GET"])
def log_entries(identity):
    base = "/redfish/v1/Systems/%s/LogServices/SEL/Entries" % identity
    with LOCK:
        st = _load()
    entries = [
        {
            "Id": "1",
            "Severity": "OK",
            "Message": "Log area reset/cleared",
            "SensorType": "Event Logging Disabled",
            "EntryCode": "Assert",
            "Created": "2026-12-01T08:00:00Z",
        },
        {
            "Id": "2",
            "Severity": "OK",
            "Message": "OEM System boot event",
            "SensorType": "System Event",
            "EntryCode": "Assert",
            "Created": "2026-12-01T08:01:00Z",
        },
        {
            "Id": "3",
            "Severity": "Warning",
            "Message": "Correctable ECC logging limit reached",
            "SensorType": "Memory",
            "EntryCode": "Assert",
            "Created": "2026-12-01T09:00:00Z",
        },
    ]
    mine = [x for x in st["log"] if x["system"] in (identity, _name(identity), "*")]
    entries += [dict(e, Id=str(3 + i + 1)) for i, e in enumerate(mine)]
    skip = int(flask.request.args.get("$skip", "0") or 0)
    page = entries[skip : skip + PAGE]
    members = []
    for e in page:
        e = {k: v for k, v in e.items() if k != "system"}
        members.append(
            _odata(
                "%s/%s" % (base, e["Id"]),
                "#LogEntry.v1_13_0.LogEntry",
                Name="SEL Entry",
                EntryType="SEL",
                MessageId="Emulator.1.0.%s" % e["SensorType"].replace(" ", ""),
                **e,
            )
        )
    doc = _odata(
        base,
        "#LogEntryCollection.LogEntryCollection",
        Name="SEL Entries",
        Members=members,
        **{"Members@odata.count": len(entries)},
    )
    if skip + PAGE < len(entries):
        doc["Members@odata.nextLink"] = "%s?$skip=%d" % (base, skip + PAGE)
    return flask.jsonify(doc)


# ------------------------------------------------------------------------------------------ chassis


def _faults(chassis):
    with LOCK:
        f = _load()["faults"]
    out = dict(f.get("*", {}))
    out.update(f.get(chassis, {}))
    return out


def _psu(chassis, i, legacy):
    f = _faults(chassis)
    name = "PSU%d" % i
    h = f.get("psu_health", "Critical") if f.get("psu") == name else "OK"
    doc = {
        "Name": name,
        "MemberId": str(i - 1),
        "Model": "PWS-3K05",
        "Manufacturer": "Emulated Power",
        "SerialNumber": "PSU-%s-%d" % (chassis, i),
        "PartNumber": "PWS-3K05-1R",
        "FirmwareVersion": "1.4",
        "PowerCapacityWatts": 3000,
        "LastPowerOutputWatts": 0 if h != "OK" else 410,
        "Status": {"State": "Enabled", "Health": h},
    }
    if not legacy:
        doc["Id"] = name
        doc["LineInputStatus"] = "LossOfInput" if h == "Critical" else "Normal"
    return doc


@app.route("/redfish/v1/Chassis/<chassis>/Power", methods=["GET"])
def power(chassis):
    base = "/redfish/v1/Chassis/%s/Power" % chassis
    psus = [dict(_psu(chassis, i, True), **{"@odata.id": "%s#/PowerSupplies/%d" % (base, i - 1)}) for i in (1, 2)]
    return flask.jsonify(
        _odata(
            base,
            "#Power.v1_5_0.Power",
            Id="Power",
            Name="Power",
            PowerSupplies=psus,
            PowerControl=[{"Name": "System Power Control", "PowerConsumedWatts": 820}],
            Voltages=[
                {
                    "Name": "P12V",
                    "ReadingVolts": 12.1,
                    "UpperThresholdCritical": 13.2,
                    "LowerThresholdCritical": 10.8,
                    "Status": {"State": "Enabled", "Health": "OK"},
                }
            ],
        )
    )


@app.route("/redfish/v1/Chassis/<chassis>/PowerSubsystem", methods=["GET"])
def power_subsystem(chassis):
    base = "/redfish/v1/Chassis/%s/PowerSubsystem" % chassis
    return flask.jsonify(
        _odata(
            base,
            "#PowerSubsystem.v1_1_0.PowerSubsystem",
            Id="PowerSubsystem",
            Name="Power Subsystem",
            PowerSupplies={"@odata.id": base + "/PowerSupplies"},
        )
    )


@app.route("/redfish/v1/Chassis/<chassis>/PowerSubsystem/PowerSupplies", methods=["GET"])
def power_supplies(chassis):
    base = "/redfish/v1/Chassis/%s/PowerSubsystem/PowerSupplies" % chassis
    return flask.jsonify(
        _collection(base, "#PowerSupplyCollection.PowerSupplyCollection", [base + "/PSU1", base + "/PSU2"])
    )


@app.route("/redfish/v1/Chassis/<chassis>/PowerSubsystem/PowerSupplies/<psu>", methods=["GET"])
def power_supply(chassis, psu):
    if psu not in ("PSU1", "PSU2"):
        return _not_found()
    base = "/redfish/v1/Chassis/%s/PowerSubsystem/PowerSupplies/%s" % (chassis, psu)
    return flask.jsonify(_odata(base, "#PowerSupply.v1_5_0.PowerSupply", **_psu(chassis, int(psu[-1]), False)))


@app.route("/redfish/v1/Chassis/<chassis>/ThermalSubsystem", methods=["GET"])
def thermal_subsystem(chassis):
    base = "/redfish/v1/Chassis/%s/ThermalSubsystem" % chassis
    return flask.jsonify(
        _odata(
            base,
            "#ThermalSubsystem.v1_3_0.ThermalSubsystem",
            Id="ThermalSubsystem",
            Name="Thermal Subsystem",
            Fans={"@odata.id": base + "/Fans"},
            LeakDetection={"@odata.id": base + "/LeakDetection"},
        )
    )


@app.route("/redfish/v1/Chassis/<chassis>/ThermalSubsystem/Fans", methods=["GET"])
def fans(chassis):
    base = "/redfish/v1/Chassis/%s/ThermalSubsystem/Fans" % chassis
    return flask.jsonify(_collection(base, "#FanCollection.FanCollection", ["%s/Fan%d" % (base, i) for i in (1, 2)]))


@app.route("/redfish/v1/Chassis/<chassis>/ThermalSubsystem/Fans/<fan>", methods=["GET"])
def fan(chassis, fan):
    if fan not in ("Fan1", "Fan2"):
        return _not_found()
    base = "/redfish/v1/Chassis/%s/ThermalSubsystem/Fans/%s" % (chassis, fan)
    return flask.jsonify(
        _odata(
            base,
            "#Fan.v1_3_0.Fan",
            Id=fan,
            Name=fan,
            SpeedPercent={"Reading": 45, "SpeedRPM": 9100},
            Status={"State": "Enabled", "Health": "OK"},
        )
    )


@app.route("/redfish/v1/Chassis/<chassis>/ThermalSubsystem/LeakDetection", methods=["GET"])
def leak_detection(chassis):
    base = "/redfish/v1/Chassis/%s/ThermalSubsystem/LeakDetection" % chassis
    return flask.jsonify(
        _odata(
            base,
            "#LeakDetection.v1_0_0.LeakDetection",
            Id="LeakDetection",
            Name="Leak Detection",
            LeakDetectors={"@odata.id": base + "/LeakDetectors"},
        )
    )


@app.route("/redfish/v1/Chassis/<chassis>/ThermalSubsystem/LeakDetection/LeakDetectors", methods=["GET"])
def leak_detectors(chassis):
    base = "/redfish/v1/Chassis/%s/ThermalSubsystem/LeakDetection/LeakDetectors" % chassis
    return flask.jsonify(_collection(base, "#LeakDetectorCollection.LeakDetectorCollection", [base + "/ColdPlate0"]))


@app.route("/redfish/v1/Chassis/<chassis>/ThermalSubsystem/LeakDetection/LeakDetectors/<det>", methods=["GET"])
def leak_detector(chassis, det):
    if det != "ColdPlate0":
        return _not_found()
    base = "/redfish/v1/Chassis/%s/ThermalSubsystem/LeakDetection/LeakDetectors/%s" % (chassis, det)
    state = _faults(chassis).get("leak", "OK")
    return flask.jsonify(
        _odata(
            base,
            "#LeakDetector.v1_1_0.LeakDetector",
            Id=det,
            Name="Cold Plate 0 Leak Detector",
            LeakDetectorType="Moisture",
            DetectorState=state,
            PhysicalContext="LiquidInlet",
            Status={"State": "Enabled", "Health": state},
        )
    )


#: Coolant sensors: id -> (name, ReadingType, units, normal reading, faulted reading, fault key, PhysicalContext)
COOLANT = {
    "CoolantFlow": ("Coolant Flow", "LiquidFlow", "L/s", 0.25, 0.02, "coolant_flow", "LiquidInlet"),
    "CoolantPressure": ("Coolant Supply Pressure", "PressurekPa", "kPa", 210, 40, "coolant_pressure", "LiquidInlet"),
    "CoolantSupplyTemp": ("Coolant Supply Temp", "Temperature", "Cel", 32, 61, "coolant_temp", "LiquidInlet"),
}


@app.route("/redfish/v1/Chassis/<chassis>/Sensors", methods=["GET"])
def sensors(chassis):
    base = "/redfish/v1/Chassis/%s/Sensors" % chassis
    return flask.jsonify(
        _collection(base, "#SensorCollection.SensorCollection", ["%s/%s" % (base, i) for i in COOLANT])
    )


@app.route("/redfish/v1/Chassis/<chassis>/Sensors/<sid>", methods=["GET"])
def sensor(chassis, sid):
    if sid not in COOLANT:
        return _not_found()
    name, rtype, units, normal, faulted, key, context = COOLANT[sid]
    health = _faults(chassis).get(key, "OK")
    return flask.jsonify(
        _odata(
            "/redfish/v1/Chassis/%s/Sensors/%s" % (chassis, sid),
            "#Sensor.v1_7_0.Sensor",
            Id=sid,
            Name=name,
            ReadingType=rtype,
            ReadingUnits=units,
            Reading=normal if health == "OK" else faulted,
            PhysicalContext=context,
            Status={"State": "Enabled", "Health": health},
        )
    )


# ------------------------------------------------------------------------------------------ firmware + update


@app.route("/redfish/v1/UpdateService/FirmwareInventory", methods=["GET"])
def fw_inventory():
    base = "/redfish/v1/UpdateService/FirmwareInventory"
    return flask.jsonify(
        _collection(
            base,
            "#SoftwareInventoryCollection.SoftwareInventoryCollection",
            ["%s/%s-%s" % (base, s, c) for s in _systems() for c in COMPONENTS],
        )
    )


@app.route("/redfish/v1/UpdateService/FirmwareInventory/<item>", methods=["GET"])
def fw_item(item):
    system, _sep, comp = item.rpartition("-")
    if system not in _systems() or comp not in COMPONENTS:
        return _not_found()
    with LOCK:
        version = _versions(_load(), system)[comp]
    return flask.jsonify(
        _odata(
            "/redfish/v1/UpdateService/FirmwareInventory/" + item,
            "#SoftwareInventory.v1_2_0.SoftwareInventory",
            Id=item,
            Name="%s %s" % (system, NAMES[comp]),
            Version=version,
            Updateable=True,
            Status={"State": "Enabled", "Health": "OK"},
        )
    )


def _targets(body):
    """[(system, component)] from Targets (FirmwareInventory or System URIs); default: BIOS of every system."""
    out = []
    for t in body.get("Targets") or []:
        last = str(t).rstrip("/").rsplit("/", 1)[-1]
        if "/FirmwareInventory/" in str(t):
            system, _sep, comp = last.rpartition("-")
            out.append((system, comp))
        elif "/Systems/" in str(t):
            out.append((_name(last), "BIOS"))
        elif "/Managers/" in str(t):
            out.extend((s, "BMC") for s in _systems())
    return out or [(s, "BIOS") for s in _systems()]


def _new_version(uri, old):
    m = re.search(r"(\d+(?:\.\d+)+)(?:\.bin|\.fwpkg|\.img|\.tar|\.zip|$)", uri or "")
    if m:
        return m.group(1)
    parts = old.split(".")
    parts[-1] = str(int(parts[-1]) + 1) if parts[-1].isdigit() else parts[-1] + "1"
    return ".".join(parts)


def _task_doc(tid, task):
    polls = task["polls"]
    if polls < POLLS:
        state, status, pct = "Running", "OK", int(100 * polls / max(POLLS, 1))
    elif task["fail"]:
        state, status, pct = "Exception", "Critical", 100
    else:
        state, status, pct = "Completed", "OK", 100
    msg = "Image %s: %s" % (
        task["image"],
        {
            "Running": "transferring/applying",
            "Completed": "applied; pending reset",
            "Exception": "image verification failed",
        }[state],
    )
    return _odata(
        "/redfish/v1/TaskService/Tasks/%s" % tid,
        "#Task.v1_4_3.Task",
        Id=str(tid),
        Name="SimpleUpdate",
        TaskState=state,
        TaskStatus=status,
        PercentComplete=pct,
        TaskMonitor="/redfish/v1/TaskService/TaskMonitors/%s" % tid,
        Messages=[
            {
                "Message": msg,
                "MessageId": "Update.1.0.%s"
                % (
                    "UpdateInProgress"
                    if state == "Running"
                    else "ApplyFailed"
                    if state == "Exception"
                    else "AwaitToActivate"
                ),
            }
        ],
    )


def _poll(tid):
    """One poll of a task: advances it; on completion the versions become pending."""
    with LOCK:
        st = _load()
        task = st["tasks"].get(str(tid))
        if task is None:
            return None
        doc = _task_doc(tid, task)
        if task["polls"] < POLLS:
            task["polls"] += 1
        elif not task["done"]:
            task["done"] = True
            if not task["fail"]:
                for system, comp in task["targets"]:
                    old = st["pending"].get(system, {}).get(comp) or _versions(st, system).get(comp, "1.0.0")
                    st["pending"].setdefault(system, {})[comp] = _new_version(task["image"], old)
        _save(st)
    return doc


def simple_update():
    body = flask.request.get_json(silent=True) or {}
    image = body.get("ImageURI")
    if not image:
        return flask.jsonify({"error": {"code": "Base.1.0.PropertyMissing", "message": "ImageURI is required"}}), 400
    targets = _targets(body)
    for system, comp in targets:
        if system not in _systems() or comp not in COMPONENTS:
            return flask.jsonify(
                {
                    "error": {
                        "code": "Base.1.0.ActionParameterValueError",
                        "message": "unknown target %s-%s" % (system, comp),
                    }
                }
            ), 400
    with LOCK:
        st = _load()
        tid = st["next_task"]
        st["next_task"] = tid + 1
        st["tasks"][str(tid)] = {
            "image": image,
            "targets": targets,
            "polls": 0,
            "done": False,
            "fail": "fail" in image.lower(),
        }
        _save(st)
        doc = _task_doc(tid, st["tasks"][str(tid)])
    resp = flask.jsonify(doc)
    resp.status_code = 202
    resp.headers["Location"] = "/redfish/v1/TaskService/TaskMonitors/%s" % tid
    return resp


# replace the stock SimpleUpdate (which answers 204 and bumps BIOS at once)
app.view_functions["UpdateService.update_service_simple_update"] = simple_update


@app.route("/redfish/v1/TaskService/Tasks", methods=["GET"])
def tasks():
    with LOCK:
        ids = sorted(_load()["tasks"])
    base = "/redfish/v1/TaskService/Tasks"
    return flask.jsonify(_collection(base, "#TaskCollection.TaskCollection", ["%s/%s" % (base, i) for i in ids]))


@app.route("/redfish/v1/TaskService/Tasks/<int:tid>", methods=["GET"])
def task(tid):
    doc = _poll(tid)
    return flask.jsonify(doc) if doc is not None else _not_found()


@app.route("/redfish/v1/TaskService/TaskMonitors/<int:tid>", methods=["GET"])
def task_monitor(tid):
    doc = _poll(tid)
    if doc is None:
        return _not_found()
    resp = flask.jsonify(doc)
    if doc["TaskState"] == "Running":
        resp.status_code = 202
        resp.headers["Location"] = "/redfish/v1/TaskService/TaskMonitors/%s" % tid
        resp.headers["Retry-After"] = "1"
    return resp


@app.after_request
def _apply_pending_on_reset(resp):
    m = re.match(r"^/redfish/v1/Systems/([^/]+)/Actions/ComputerSystem.Reset/?$", flask.request.path)
    if m and flask.request.method == "POST" and 200 <= resp.status_code < 300:
        system = _name(m.group(1))
        with LOCK:
            st = _load()
            pending = st["pending"].pop(system, {})
            if pending:
                st["versions"].setdefault(system, {}).update(pending)
                _save(st)
    return resp


# ------------------------------------------------------------------------------------------ fault injection


@app.route("/emulator/faults", methods=["GET", "POST", "DELETE"])
def faults():
    with LOCK:
        st = _load()
        if flask.request.method == "DELETE":
            st["faults"] = {}
            st["log"] = []
        elif flask.request.method == "POST":
            body = flask.request.get_json(silent=True) or {}
            chassis = body.pop("chassis", "*")
            st["faults"].setdefault(chassis, {}).update(body)
            system = body.pop("system", "*")
            if body.get("psu"):
                _add_log(
                    st, system, body.get("psu_health", "Critical"), "%s Failure detected" % body["psu"], "Power Supply"
                )
            if body.get("leak") and body["leak"] != "OK":
                _add_log(st, system, body["leak"], "Coolant leak detected", "Cooling Device")
            for key, text in (("coolant_flow", "Coolant flow below lower threshold"),
                              ("coolant_pressure", "Coolant supply pressure out of range"),
                              ("coolant_temp", "Coolant supply temperature above upper threshold")):  # fmt: skip
                if body.get(key) and body[key] != "OK":
                    _add_log(st, system, body[key], text, "Cooling Device")
        _save(st)
        return flask.jsonify({"faults": st["faults"], "pending": st["pending"]})


if __name__ == "__main__":
    os.makedirs(W, exist_ok=True)
    raise SystemExit(sushy_main.main())
