# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure per-resource parsers for Redfish JSON (formats.md section 8).

Each ``parse_<resource>(doc)`` takes one decoded JSON object and returns a *fragment*: a dict with some of
the keys ``sensors`` (the bmc domain's normalized sensor list) and ``systems``, ``chassis``, ``firmware``,
``managers``, ``leak_detectors``, ``log_entries``, ``psus``, ``memory`` (the ``redfish`` sub-dict).
``parse_document`` dispatches on ``@odata.type``; ``merge`` adds fragments together. Collections whose
``Members`` are expanded objects are parsed member by member. Health is compared case-insensitively.

Runs on managed nodes (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, Records, clean, to_float
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.ipmi_sdr import sensor_record

REDFISH_KEYS = ("systems", "chassis", "firmware", "managers", "leak_detectors", "log_entries", "psus", "memory")


def empty() -> Dict[str, Any]:
    out: Dict[str, Any] = {"sensors": []}
    for k in REDFISH_KEYS:
        out[k] = []
    return out


def merge(into: Dict[str, Any], frag: Dict[str, Any]) -> Dict[str, Any]:
    for k, v in frag.items():
        into.setdefault(k, []).extend(v)
    return into


def odata_type(doc: Any) -> Optional[str]:
    """``'#Thermal.v1_4_0.Thermal'`` -> ``'Thermal'``; ``'#Power.v1_5_0.PowerSupply'`` -> ``'PowerSupply'``."""
    if not isinstance(doc, dict):
        return None
    t = doc.get("@odata.type")
    if not isinstance(t, str) or not t:
        return None
    return t.lstrip("#").split(".")[-1] or None


def health(value: Any) -> Optional[str]:
    """``OK``/``Ok``/``ok`` -> ``OK``; ``Warning`` -> ``Warning``; ``Critical`` -> ``Critical``; else None."""
    v = clean(value)
    if not isinstance(v, str):
        return None
    return {"ok": "OK", "warning": "Warning", "critical": "Critical"}.get(v.lower())


def _status(doc: Dict[str, Any]) -> Dict[str, Any]:
    st = doc.get("Status")
    return st if isinstance(st, dict) else {}


def _state(doc: Dict[str, Any]) -> Optional[str]:
    v = _status(doc).get("State")  # not clean(): "Disabled" is a state here, not a sentinel
    return v.strip() or None if isinstance(v, str) else None


def sensor_status(doc: Dict[str, Any]) -> str:
    """Normalized sensor status from a Redfish Status object."""
    st = _status(doc)
    state = st.get("State") if isinstance(st.get("State"), str) else ""
    if state.lower() in ("absent", "disabled", "unavailableoffline"):
        return "not_present"
    h = health(st.get("Health"))
    if h == "OK":
        return "ok"
    if h == "Warning":
        return "non_critical"
    if h == "Critical":
        return "critical"
    return "unknown"


def _num(v: Any) -> Optional[float]:
    """A JSON number or numeric string; finite only (JSON's ``NaN``/``Infinity``, a 400-digit integer: None)."""
    if isinstance(v, bool):
        return None
    return to_float(v) if isinstance(v, (int, float, str)) else None


def _str(v: Any) -> Optional[str]:
    v = clean(v)
    if v is None or isinstance(v, (dict, list)):
        return None
    return str(v).strip() or None


def _id(doc: Dict[str, Any]) -> Optional[str]:
    return _str(doc.get("Id")) or _str(doc.get("MemberId")) or _str(doc.get("@odata.id"))


def _thresholds(doc: Dict[str, Any]) -> Dict[str, float]:
    names = {
        "LowerThresholdFatal": "lnr",
        "LowerThresholdCritical": "lcr",
        "LowerThresholdNonCritical": "lnc",
        "UpperThresholdNonCritical": "unc",
        "UpperThresholdCritical": "ucr",
        "UpperThresholdFatal": "unr",
    }
    out: Dict[str, float] = {}
    for key, short in names.items():
        v = _num(doc.get(key))
        if v is not None:
            out[short] = v
    th = doc.get("Thresholds")
    if isinstance(th, dict):
        new = {
            "LowerFatal": "lnr",
            "LowerCritical": "lcr",
            "LowerCaution": "lnc",
            "UpperCaution": "unc",
            "UpperCritical": "ucr",
            "UpperFatal": "unr",
        }
        for key, short in new.items():
            ent = th.get(key)
            v = _num(ent.get("Reading")) if isinstance(ent, dict) else None
            if v is not None:
                out[short] = v
    return out


def _sensor(name, stype, reading, unit, status, states=None, **more):
    """A sensor record as ipmitool's (``more``: ``thresholds``, and ``source``, the Redfish resource it came from)."""
    return sensor_record(
        name,
        stype,
        status,
        reading=reading,
        unit=unit,
        states=states or [],
        thresholds=more.get("thresholds") or {},
        entity=more.get("source"),
    )


def _list(doc: Dict[str, Any], key: str) -> List[Dict[str, Any]]:
    v = doc.get(key)
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


# ------------------------------------------------------------------------------------------ resources


def _identity(doc: Dict[str, Any], rollup: bool = True) -> Dict[str, Any]:
    """``id``, ``name``, ``health`` (and ``health_rollup``) and ``state`` of a resource."""
    st = _status(doc)
    out = {"id": _id(doc), "name": _str(doc.get("Name")), "health": health(st.get("Health"))}
    if rollup:
        out["health_rollup"] = health(st.get("HealthRollup"))
    out["state"] = _state(doc)
    return out


def _strings(doc: Dict[str, Any], fields: Tuple[Tuple[str, str], ...]) -> Dict[str, Any]:
    """``{our key: the Redfish property as a string}`` for each ``(our key, property)`` of ``fields``."""
    return {key: _str(doc.get(prop)) for key, prop in fields}


_SYSTEM_FIELDS = (
    ("power_state", "PowerState"),
    ("bios_version", "BiosVersion"),
    ("serial", "SerialNumber"),
    ("model", "Model"),
    ("manufacturer", "Manufacturer"),
    ("uuid", "UUID"),
)
_CHASSIS_FIELDS = (
    ("chassis_type", "ChassisType"),
    ("power_state", "PowerState"),
    ("serial", "SerialNumber"),
    ("model", "Model"),
    ("manufacturer", "Manufacturer"),
)
_MANAGER_FIELDS = (("firmware_version", "FirmwareVersion"), ("model", "Model"), ("manager_type", "ManagerType"))


def parse_system(doc: Dict[str, Any]) -> Dict[str, Any]:
    return {"systems": [dict(_identity(doc), **_strings(doc, _SYSTEM_FIELDS))]}


def parse_chassis(doc: Dict[str, Any]) -> Dict[str, Any]:
    return {"chassis": [dict(_identity(doc), **_strings(doc, _CHASSIS_FIELDS))]}


def parse_manager(doc: Dict[str, Any]) -> Dict[str, Any]:
    return {"managers": [dict(_identity(doc, rollup=False), **_strings(doc, _MANAGER_FIELDS))]}


def _each(doc: Dict[str, Any], key: str, rec: Optional[Records], build: Any) -> None:
    """``build(entry)`` for each dict entry of ``doc[key]``, each inside ``rec``'s record boundary (if any)."""
    for item in _list(doc, key):
        if rec is None:
            build(item)
            continue
        with rec.at(None):
            build(item)


def _legacy_sensor(e: Dict[str, Any], kind: str, reading: str, unit: str, source: str) -> Dict[str, Any]:
    """A sensor from an entry of a legacy array whose reading has a fixed unit (Thermal Temperatures[], Power
    Voltages[]): its name, ``e[reading]``, status and thresholds."""
    return _sensor(
        _str(e.get("Name")) or _id(e),
        kind,
        _num(e.get(reading)),
        unit,
        sensor_status(e),
        thresholds=_thresholds(e),
        source=source,
    )


def parse_thermal(doc: Dict[str, Any], rec: Optional[Records] = None) -> Dict[str, Any]:
    """Legacy ``Chassis/<id>/Thermal``: Temperatures[] and Fans[] (incl. iLO4 FanName/CurrentReading/Units)."""
    sensors: List[Dict[str, Any]] = []

    def temperature(t: Dict[str, Any]) -> None:
        kind = sensor_type(dict(t, ReadingType="Temperature"))[0]  # a coolant temperature is "coolant"
        sensors.append(_legacy_sensor(t, kind, "ReadingCelsius", "C", "Thermal"))

    def fan(f: Dict[str, Any]) -> None:
        reading = _num(f.get("Reading"))
        units = _str(f.get("ReadingUnits"))
        if reading is None:
            reading = _num(f.get("CurrentReading"))
            units = units or _str(f.get("Units"))
        unit = {"rpm": "RPM", "percent": "%"}.get((units or "").lower(), units)
        sensors.append(
            _sensor(
                _str(f.get("Name")) or _str(f.get("FanName")) or _id(f),
                "fan",
                reading,
                unit if reading is not None else None,
                sensor_status(f),
                thresholds=_thresholds(f),
                source="Thermal",
            )
        )

    _each(doc, "Temperatures", rec, temperature)
    _each(doc, "Fans", rec, fan)
    return {"sensors": sensors}


def _psu_entry(p: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "name": _str(p.get("Name")) or _id(p),
        "id": _id(p),
        "serial": _str(p.get("SerialNumber")),
        "model": _str(p.get("Model")),
        "part": _str(p.get("PartNumber")),
        "firmware_version": _str(p.get("FirmwareVersion")),
        "health": health(_status(p).get("Health")),
        "state": _state(p),
        "capacity_w": _num(p.get("PowerCapacityWatts")),
        "line_input_status": _str(p.get("LineInputStatus")),
    }


def _psu_sensor(p: Dict[str, Any], source: str) -> Dict[str, Any]:
    status = sensor_status(p)
    states = []
    lis = _str(p.get("LineInputStatus"))
    if lis and lis.lower() not in ("normal", "unknown"):
        states.append("LineInputStatus: %s" % lis)
        if status == "ok":
            status = "critical" if lis.lower() in ("loss", "lossofinput", "outofrange") else "non_critical"
    reading = _num(p.get("LastPowerOutputWatts"))
    return _sensor(
        _str(p.get("Name")) or _id(p),
        "power_supply",
        reading,
        "W" if reading is not None else None,
        status,
        states,
        source=source,
    )


def parse_power(doc: Dict[str, Any], rec: Optional[Records] = None) -> Dict[str, Any]:
    """Legacy ``Chassis/<id>/Power``: PowerSupplies[], Voltages[], PowerControl[]."""
    sensors: List[Dict[str, Any]] = []
    psus: List[Dict[str, Any]] = []

    def psu(p: Dict[str, Any]) -> None:
        entry, sensor = _psu_entry(p), _psu_sensor(p, "Power")
        psus.append(entry)
        sensors.append(sensor)

    def voltage(v: Dict[str, Any]) -> None:
        sensors.append(_legacy_sensor(v, "voltage", "ReadingVolts", "V", "Power"))

    def control(c: Dict[str, Any]) -> None:
        watts = _num(c.get("PowerConsumedWatts"))
        if watts is not None:
            sensors.append(
                _sensor(_str(c.get("Name")) or "Power Consumed", "power", watts, "W", sensor_status(c), source="Power")
            )

    _each(doc, "PowerSupplies", rec, psu)
    _each(doc, "Voltages", rec, voltage)
    _each(doc, "PowerControl", rec, control)
    return {"sensors": sensors, "psus": psus}


def parse_power_supply(doc: Dict[str, Any]) -> Dict[str, Any]:
    """New-model ``PowerSubsystem/PowerSupplies/<id>`` (and ``#Power.*.PowerSupply`` members)."""
    return {"psus": [_psu_entry(doc)], "sensors": [_psu_sensor(doc, "PowerSubsystem")]}


def parse_fan(doc: Dict[str, Any]) -> Dict[str, Any]:
    """New-model ``ThermalSubsystem/Fans/<id>``: SpeedPercent {Reading, SpeedRPM}."""
    sp = doc.get("SpeedPercent") if isinstance(doc.get("SpeedPercent"), dict) else {}
    rpm = _num(sp.get("SpeedRPM"))
    pct = _num(sp.get("Reading"))
    reading, unit = (rpm, "RPM") if rpm is not None else (pct, "%") if pct is not None else (None, None)
    return {
        "sensors": [
            _sensor(
                _str(doc.get("Name")) or _id(doc), "fan", reading, unit, sensor_status(doc), source="ThermalSubsystem"
            )
        ]
    }


#: Sensor ReadingType -> (our sensor type, unit). No Sensor ReadingType is a leak: leaks come only from
#: LeakDetection/LeakDetectors (``parse_leak_detector``). Coolant flow, pressure and level are ``coolant``
#: (cooling findings, never the leak power-off path).
_SENSOR_TYPES = {
    "temperature": ("temperature", "C"),
    "voltage": ("voltage", "V"),
    "current": ("current", "A"),
    "power": ("power", "W"),
    "rotational": ("fan", "RPM"),
    "percent": ("other", "%"),
    "liquidflow": ("coolant", "L/s"),
    "liquidflowlpm": ("coolant", "L/min"),
    "liquidlevel": ("coolant", "cm"),
    "pressure": ("coolant", "Pa"),
    "pressurepa": ("coolant", "Pa"),
    "pressurekpa": ("coolant", "kPa"),
    "humidity": ("other", "%"),
}
#: PhysicalContext values of a temperature sensor that measures the coolant, not the air or a part.
_COOLANT_CONTEXTS = ("liquidinlet", "liquidoutlet", "pump", "coolingsubsystem")


def sensor_type(doc: Dict[str, Any]) -> Tuple[str, Optional[str]]:
    """(type, unit) of a Redfish Sensor from its ReadingType (and PhysicalContext for coolant temperatures)."""
    rtype = (_str(doc.get("ReadingType")) or "").lower()
    stype, unit = _SENSOR_TYPES.get(rtype, ("other", None))
    if stype == "temperature" and (_str(doc.get("PhysicalContext")) or "").lower() in _COOLANT_CONTEXTS:
        stype = "coolant"
    return stype, unit


def parse_sensor(doc: Dict[str, Any]) -> Dict[str, Any]:
    """``Chassis/<id>/Sensors/<id>`` (Sensor resource)."""
    stype, unit = sensor_type(doc)
    units = _str(doc.get("ReadingUnits"))
    if units:
        unit = {"cel": "C", "v": "V", "a": "A", "w": "W", "rpm": "RPM", "%": "%"}.get(units.lower(), units)
    return {
        "sensors": [
            _sensor(
                _str(doc.get("Name")) or _id(doc),
                stype,
                _num(doc.get("Reading")),
                unit,
                sensor_status(doc),
                thresholds=_thresholds(doc),
                source="Sensors",
            )
        ]
    }


def parse_leak_detector(doc: Dict[str, Any]) -> Dict[str, Any]:
    """``ThermalSubsystem/LeakDetection/LeakDetectors/<id>``: DetectorState OK | Warning | Critical."""
    state = health(doc.get("DetectorState"))
    h = health(_status(doc).get("Health"))
    status = {"OK": "ok", "Warning": "non_critical", "Critical": "critical"}.get(state or "", sensor_status(doc))
    if (_state(doc) or "").lower() in ("absent", "disabled"):
        status = "not_present"
    name = _str(doc.get("Name")) or _id(doc)
    states = ["DetectorState: %s" % state] if state else []
    return {
        "leak_detectors": [
            {
                "name": name,
                "id": _id(doc),
                "state": state,
                "health": h,
                "detector_type": _str(doc.get("LeakDetectorType")),
                "physical_context": _str(doc.get("PhysicalContext")),
            }
        ],
        "sensors": [_sensor(name, "leak", None, None, status, states, source="LeakDetection")],
    }


def parse_leak_detection(doc: Dict[str, Any]) -> Dict[str, Any]:
    """``ThermalSubsystem/LeakDetection``: LeakDetectorGroups[].Detectors[] excerpts (DeviceName, DetectorState)."""
    out = empty()
    for g in _list(doc, "LeakDetectorGroups"):
        for d in _list(g, "Detectors"):
            name = _str(d.get("DeviceName")) or _str(d.get("DataSourceUri"))
            merge(out, parse_leak_detector({"Name": name, "DetectorState": d.get("DetectorState")}))
    return out


def parse_log_entry(doc: Dict[str, Any]) -> Dict[str, Any]:
    resolved = doc.get("Resolved")
    return {
        "log_entries": [
            {
                "id": _id(doc),
                "created": _str(doc.get("Created")),
                "severity": health(doc.get("Severity")) or _str(doc.get("Severity")),
                "message": _str(doc.get("Message")),
                "message_id": _str(doc.get("MessageId")),
                "entry_type": _str(doc.get("EntryType")),
                "entry_code": _str(doc.get("EntryCode")),
                "sensor_type": _str(doc.get("SensorType")),
                "sensor_number": _num(doc.get("SensorNumber")),
                "resolved": resolved if isinstance(resolved, bool) else None,
            }
        ]
    }


def parse_software(doc: Dict[str, Any]) -> Dict[str, Any]:
    upd = doc.get("Updateable")
    return {
        "firmware": [
            {
                "id": _id(doc),
                "name": _str(doc.get("Name")),
                "version": _str(doc.get("Version")),
                "updateable": upd if isinstance(upd, bool) else None,
                "health": health(_status(doc).get("Health")),
            }
        ]
    }


def parse_memory(doc: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "memory": [
            {
                "id": _id(doc),
                "name": _str(doc.get("Name")),
                "serial": _str(doc.get("SerialNumber")),
                "part": _str(doc.get("PartNumber")),
                "capacity_mib": _num(doc.get("CapacityMiB")),
                "health": health(_status(doc).get("Health")),
                "state": _state(doc),
            }
        ]
    }


PARSERS = {
    "ComputerSystem": parse_system,
    "Chassis": parse_chassis,
    "Manager": parse_manager,
    "Thermal": parse_thermal,
    "Power": parse_power,
    "PowerSupply": parse_power_supply,
    "Fan": parse_fan,
    "Sensor": parse_sensor,
    "LeakDetector": parse_leak_detector,
    "LeakDetection": parse_leak_detection,
    "LogEntry": parse_log_entry,
    "SoftwareInventory": parse_software,
    "Memory": parse_memory,
}


#: Resources with lists of sensors inside (legacy Thermal/Power): each entry is its own record.
_PER_ENTRY = (parse_thermal, parse_power)


def parse_document(
    doc: Any, source: Optional[str] = None, errors: Optional[List[Dict[str, Any]]] = None, _depth: int = 0
) -> Dict[str, Any]:
    """Parse one Redfish resource or collection (expanded members are parsed; links are ignored).

    Unknown types give an empty fragment. Raises ParseError when ``doc`` is not a JSON object. A member of
    a collection, or an entry of a legacy Thermal/Power list, that cannot be parsed is a ``parse`` entry in
    ``errors`` and the rest of the document is kept; without an ``errors`` list a typed resource that cannot
    be parsed raises ParseError (with the rest as ``partial``).
    """
    if not isinstance(doc, dict):
        raise ParseError("Redfish document is not a JSON object", "redfish", source)
    rec = Records("redfish", source, "bmc", errors)
    out = empty()
    t = odata_type(doc)
    fn = PARSERS.get(t or "")
    if fn is not None:
        try:
            merge(out, fn(doc, rec) if fn in _PER_ENTRY else fn(doc))  # type: ignore[call-arg]
        except Exception as exc:  # noqa: BLE001 - one resource: a ParseError naming it, never a traceback
            raise ParseError("cannot parse %s: %s: %s" % (t, type(exc).__name__, exc), "redfish", source) from exc
        return rec.finish(out)
    members = doc.get("Members")
    if isinstance(members, list) and _depth < 8:
        for m in members:
            if isinstance(m, dict) and any(k != "@odata.id" for k in m):
                with rec.at(None):
                    merge(out, parse_document(m, source, rec.errors, _depth + 1))
    return rec.finish(out)
