"""sushy_plus: a Redfish SessionService (sushy-tools 2.2.0 has none; it only does Basic auth from an htpasswd file).

* POST /redfish/v1/SessionService/Sessions {"UserName", "Password"}: checked against the same htpasswd file
  (SUSHY_EMULATOR_AUTH_FILE); 201 + X-Auth-Token + Location of the session; 401 on bad credentials.
* Every other request may authenticate with X-Auth-Token instead of Basic auth; an unknown token is 401.
* GET /redfish/v1/SessionService, GET .../Sessions (collection), GET/DELETE .../Sessions/<id> (logout).
* The service root names it (SessionService, Links.Sessions) as real BMCs do.
* Test-only counters (not Redfish): GET /emulator/sessions -> {"created", "deleted", "active", "basic", "token",
  "failed_logins"} (requests authenticated each way); DELETE /emulator/sessions resets them and drops every session.
  BMC_SESSIONS=0 in the environment turns the SessionService off (root without it, the Sessions path 404).
"""

import json
import os
import secrets
import threading

import flask
import webob
from sushy_plus_state import app
from sushy_tools import error
from sushy_tools.emulator import auth_basic
from sushy_tools.emulator.main import RedfishAuthMiddleware

ENABLED = os.environ.get("BMC_SESSIONS", "1") != "0"
BASE = "/redfish/v1/SessionService"
SESSIONS = BASE + "/Sessions"
_LOCK = threading.Lock()
_TOKENS = {}  # token -> {"id", "user"}
_COUNTS = {"created": 0, "deleted": 0, "basic": 0, "token": 0, "failed_logins": 0}


def _count(key):
    with _LOCK:
        _COUNTS[key] += 1


def _unauthorized(env, start_response, message):
    body = {"error": {"code": "Base.1.0.GeneralError", "message": message}}
    resp = webob.Response(status=401, content_type="application/json", json_body=body)
    return resp(env, start_response)


class SessionAuthMiddleware(RedfishAuthMiddleware):
    """X-Auth-Token or Basic auth. A subclass, so sushy's configure() does not wrap the app a second time."""

    def __init__(self, basic):  # noqa: D107 - wraps the stock middleware instance
        self.basic = basic
        self.app = basic.app
        self.auth_file = basic.auth_file

    def __call__(self, env, start_response):
        path = env.get("PATH_INFO", "").rstrip("/")
        if ENABLED and path == SESSIONS and env.get("REQUEST_METHOD") == "POST":
            return self.app(env, start_response)  # the login checks the credentials itself
        token = env.get("HTTP_X_AUTH_TOKEN")
        if token is not None and ENABLED:
            with _LOCK:
                sess = _TOKENS.get(token)
            if sess is None:
                return _unauthorized(env, start_response, "invalid or expired session token")
            _count("token")
            env.update(HTTP_X_USER=sess["user"], HTTP_X_USER_NAME=sess["user"])
            return self.app(env, start_response)
        if env.get("HTTP_AUTHORIZATION", "").startswith("Basic "):
            _count("basic")
        return self.basic(env, start_response)


def install():
    """Put the session middleware in front of sushy's Basic auth (only when an auth file is configured)."""
    if isinstance(app.wsgi_app, RedfishAuthMiddleware) and not isinstance(app.wsgi_app, SessionAuthMiddleware):
        app.wsgi_app = SessionAuthMiddleware(app.wsgi_app)


def _session_doc(sid, user):
    return {
        "@odata.id": "%s/%s" % (SESSIONS, sid),
        "@odata.type": "#Session.v1_3_0.Session",
        "Id": sid,
        "Name": "User Session",
        "UserName": user,
    }


def _missing():
    return flask.Response(json.dumps({"error": {"code": "Base.1.0.ResourceMissingAtURI"}}), 404,
                          mimetype="application/json")  # fmt: skip


@app.route(BASE, methods=["GET"])
def session_service():
    if not ENABLED:
        return _missing()
    return flask.jsonify({"@odata.id": BASE, "@odata.type": "#SessionService.v1_1_8.SessionService",
                          "Id": "SessionService", "Name": "Session Service", "ServiceEnabled": True,
                          "SessionTimeout": 600, "Sessions": {"@odata.id": SESSIONS}})  # fmt: skip


@app.route(SESSIONS, methods=["GET", "POST"])
def sessions():
    if not ENABLED:
        return _missing()
    if flask.request.method == "GET":
        with _LOCK:
            members = [{"@odata.id": "%s/%s" % (SESSIONS, s["id"])} for s in _TOKENS.values()]
        return flask.jsonify({"@odata.id": SESSIONS, "@odata.type": "#SessionCollection.SessionCollection",
                              "Name": "Session Collection", "Members": members,
                              "Members@odata.count": len(members)})  # fmt: skip
    body = flask.request.get_json(silent=True) or {}
    user, password = body.get("UserName"), body.get("Password")
    try:
        if not isinstance(user, str) or not isinstance(password, str):
            raise error.FishyError("UserName and Password are required", 400)
        auth_basic.authenticate(app.config["SUSHY_EMULATOR_AUTH_FILE"], user, password.encode())
    except error.FishyError as exc:
        _count("failed_logins")
        code = getattr(exc, "code", 401) or 401
        return flask.Response(json.dumps({"error": {"code": "Base.1.0.GeneralError", "message": str(exc)}}),
                              code if code in (400, 401) else 401, mimetype="application/json")  # fmt: skip
    token = secrets.token_hex(16)
    with _LOCK:
        _COUNTS["created"] += 1
        sid = str(_COUNTS["created"])
        _TOKENS[token] = {"id": sid, "user": user}
    resp = flask.Response(json.dumps(_session_doc(sid, user)), 201, mimetype="application/json")
    resp.headers["X-Auth-Token"] = token
    resp.headers["Location"] = "%s/%s" % (SESSIONS, sid)
    return resp


@app.route(SESSIONS + "/<sid>", methods=["GET", "DELETE"])
def session(sid):
    with _LOCK:
        found = [t for t, s in _TOKENS.items() if s["id"] == sid]
        if not ENABLED or not found:
            return _missing()
        user = _TOKENS[found[0]]["user"]
        if flask.request.method == "DELETE":
            del _TOKENS[found[0]]
            _COUNTS["deleted"] += 1
    if flask.request.method == "DELETE":
        return flask.Response(status=204)
    return flask.jsonify(_session_doc(sid, user))


@app.route("/emulator/sessions", methods=["GET", "DELETE"])
def session_counters():
    with _LOCK:
        if flask.request.method == "DELETE":
            _TOKENS.clear()
            _COUNTS.update(dict.fromkeys(_COUNTS, 0))
        return flask.jsonify(dict(_COUNTS, active=len(_TOKENS)))


@app.after_request
def _root_links(resp):
    """The service root names the SessionService (sushy's root template does not)."""
    if (not ENABLED or flask.request.method != "GET" or flask.request.path.rstrip("/") != "/redfish/v1"
            or resp.status_code != 200 or not resp.is_json):  # fmt: skip
        return resp
    doc = resp.get_json()
    doc["SessionService"] = {"@odata.id": BASE}
    doc.setdefault("Links", {})["Sessions"] = {"@odata.id": SESSIONS}
    resp.set_data(json.dumps(doc))
    return resp


install()
