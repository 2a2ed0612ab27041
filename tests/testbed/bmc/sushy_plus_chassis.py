"""sushy_plus: Chassis/<id>/Power, PowerSubsystem, ThermalSubsystem (fans, leak detectors) and coolant Sensors."""

import flask

from sushy_plus_state import (
    LOCK,
    _collection,
    _load,
    _not_found,
    _odata,
    app,
)


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
