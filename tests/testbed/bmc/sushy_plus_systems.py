"""sushy_plus: Systems/<id>/Memory (DIMM serials) and LogServices/SEL/Entries (paginated)."""

import re

import flask

from sushy_plus_state import (
    LOCK,
    PAGE,
    _collection,
    _load,
    _name,
    _not_found,
    _odata,
    app,
)


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
