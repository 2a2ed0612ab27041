"""sushy_plus: UpdateService FirmwareInventory, SimpleUpdate with a TaskMonitor, and pending versions that apply
on ComputerSystem.Reset."""

import re

import flask

from sushy_plus_state import (
    COMPONENTS,
    LOCK,
    NAMES,
    POLLS,
    _collection,
    _load,
    _name,
    _not_found,
    _odata,
    _save,
    _systems,
    _versions,
    app,
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
