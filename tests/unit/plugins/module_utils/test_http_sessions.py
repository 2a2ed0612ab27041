# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_http.Http: Redfish session auth (auto/session/basic, re-login, logout) and TLS verification with ca_path.

Real sockets: a small fake Redfish service per scenario (http.server), and a TLS server with a certificate made
by openssl for ca_path.
"""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils._http import Http, HttpError, redfish_message

PASSWORD = "s3ss10n-Pa55"
TOKEN = "tok-0123456789abcdef"


class FakeRedfish(BaseHTTPRequestHandler):
    """Behaviour from the server's ``cfg``: sessions (bool), login_status, token (header or None), location,
    expire_after (token requests before the token stops working), root_status."""

    def log_message(self, *args):
        pass

    @property
    def cfg(self):
        return self.server.cfg

    def _send(self, code, body=None, headers=None):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _log(self, method, body=None):
        self.server.log.append(
            {"method": method, "path": self.path, "auth": self.headers.get("Authorization"),
             "token": self.headers.get("X-Auth-Token"), "body": body}
        )  # fmt: skip

    def _authorized(self):
        cfg = self.cfg
        token = self.headers.get("X-Auth-Token")
        if token is not None:
            if token not in cfg["live"] or cfg.get("reject_tokens"):
                return False
            cfg["uses"] = cfg.get("uses", 0) + 1
            if cfg.get("expire_after") and cfg["uses"] >= cfg["expire_after"]:
                cfg["live"].discard(token)  # this request still passes; the next one gets 401
            return True
        auth = self.headers.get("Authorization") or ""
        return auth == "Basic " + base64.b64encode(("admin:" + PASSWORD).encode()).decode()

    def do_GET(self):  # noqa: N802
        self._log("GET")
        if self.path == "/redfish/v1":
            if self.cfg.get("root_status", 200) != 200:
                return self._send(self.cfg["root_status"], {"error": {"message": "auth required"}})
            doc = {"@odata.id": "/redfish/v1", "Systems": {"@odata.id": "/redfish/v1/Systems"}}
            if self.cfg.get("sessions"):
                doc["SessionService"] = {"@odata.id": "/redfish/v1/SessionService"}
                doc["Links"] = {"Sessions": {"@odata.id": "/redfish/v1/SessionService/Sessions"}}
            return self._send(200, doc)
        if not self._authorized():
            return self._send(401, {"error": {"message": "unauthorized"}})
        return self._send(200, {"@odata.id": self.path, "Members": []})

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"null")
        self._log("POST", body)
        cfg = self.cfg
        if self.path.startswith("/redfish/v1/SessionService/Sessions"):
            status = cfg.get("login_status", 201)
            if status >= 300:
                return self._send(status, {"error": {"@Message.ExtendedInfo": [{"Message": "Login refused"}]}})
            if body != {"UserName": "admin", "Password": PASSWORD}:
                return self._send(401, {"error": {"message": "bad credentials"}})
            cfg["logins"] = cfg.get("logins", 0) + 1
            token = cfg.get("token", TOKEN)
            headers = {"Location": cfg.get("location", "/redfish/v1/SessionService/Sessions/7")}
            if token:
                token = "%s-%d" % (token, cfg["logins"])
                cfg["live"].add(token)
                headers["X-Auth-Token"] = token
            return self._send(201, {"@odata.id": "/redfish/v1/SessionService/Sessions/7", "UserName": "admin"}, headers)
        if not self._authorized():
            return self._send(401, {"error": {"message": "unauthorized"}})
        return self._send(200, {"ok": True})

    def do_DELETE(self):  # noqa: N802
        self._log("DELETE")
        token = self.headers.get("X-Auth-Token")
        if token in self.cfg["live"]:
            self.cfg["live"].discard(token)
            return self._send(204)
        return self._send(401, {"error": {"message": "unauthorized"}})


@pytest.fixture
def bmc():
    """``bmc(**cfg)`` -> (base url, server): a fresh fake Redfish service."""
    servers = []

    def start(**cfg):
        srv = ThreadingHTTPServer(("127.0.0.1", 0), FakeRedfish)
        srv.daemon_threads = True
        srv.cfg = dict(cfg, live=set())
        srv.log = []
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return "http://127.0.0.1:%d" % srv.server_address[1], srv

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _requests(srv):
    return [(e["method"], e["path"]) for e in srv.log]


@pytest.mark.parametrize("auth", ["auto", "session"])
def test_session_login_token_and_logout(bmc, auth):
    url, srv = bmc(sessions=True)
    with Http(url, "admin", PASSWORD, timeout=5, auth=auth) as h:
        assert h.get_json("/redfish/v1/Systems")["@odata.id"] == "/redfish/v1/Systems"
        h.get_json("/redfish/v1/Chassis")
        assert h.auth_used == "session" and h.session_uri == "/redfish/v1/SessionService/Sessions/7"
    assert _requests(srv) == [
        ("GET", "/redfish/v1"),
        ("POST", "/redfish/v1/SessionService/Sessions"),
        ("GET", "/redfish/v1/Systems"),
        ("GET", "/redfish/v1/Chassis"),
        ("DELETE", "/redfish/v1/SessionService/Sessions/7"),
    ]
    for entry in srv.log[2:]:
        assert entry["auth"] is None and entry["token"] == TOKEN + "-1"  # never Basic once the session exists
    assert srv.cfg["live"] == set()  # logged out
    assert h.close() is False  # a second close sends nothing
    assert len(srv.log) == 5


def test_auto_falls_back_to_basic_without_a_session_service(bmc):
    url, srv = bmc(sessions=False)
    with Http(url, "admin", PASSWORD, timeout=5) as h:  # auto is the default
        h.get_json("/redfish/v1/Systems")
        assert h.auth_used == "basic"
    assert _requests(srv) == [("GET", "/redfish/v1"), ("GET", "/redfish/v1/Systems")]
    assert base64.b64decode(srv.log[-1]["auth"].split()[1]).decode() == "admin:" + PASSWORD


@pytest.mark.parametrize("status", [404, 405, 501])
def test_auto_falls_back_to_basic_when_the_login_is_not_supported(bmc, status):
    url, srv = bmc(sessions=True, login_status=status)
    with Http(url, "admin", PASSWORD, timeout=5) as h:
        h.get_json("/redfish/v1/Systems")
        assert h.auth_used == "basic"
    assert srv.log[-1]["auth"].startswith("Basic ")


def test_session_mode_refuses_a_service_without_sessions(bmc):
    url, srv = bmc(sessions=False)
    with pytest.raises(HttpError, match="auth=session: the service has no SessionService"):
        Http(url, "admin", PASSWORD, timeout=5, auth="session").get_json("/redfish/v1/Systems")
    assert all(e["auth"] is None for e in srv.log)  # nothing was sent with Basic auth


@pytest.mark.parametrize(
    "cfg, match",
    [
        ({"login_status": 401}, r"session login failed \(HTTP 401: Login refused\)"),
        ({"login_status": 403}, r"session login failed \(HTTP 403"),
        ({"token": None}, r"session login failed \(no X-Auth-Token\)"),
    ],
)
def test_failed_login_is_an_error_never_retried_with_basic(bmc, cfg, match):
    url, srv = bmc(sessions=True, **cfg)
    with pytest.raises(HttpError, match=match) as ei:
        Http(url, "admin", PASSWORD, timeout=5).get_json("/redfish/v1/Systems")
    assert all(e["auth"] is None for e in srv.log)
    assert PASSWORD not in str(ei.value) and PASSWORD not in repr(ei.value.__dict__)


def test_expired_session_logs_in_again_once(bmc):
    url, srv = bmc(sessions=True, expire_after=2)
    with Http(url, "admin", PASSWORD, timeout=5) as h:
        for path in ("/redfish/v1/Systems", "/redfish/v1/Chassis", "/redfish/v1/Managers"):
            h.get_json(path)
    methods = _requests(srv)
    assert methods.count(("POST", "/redfish/v1/SessionService/Sessions")) == 2
    assert srv.log[-1]["method"] == "DELETE" and srv.log[-1]["token"] == TOKEN + "-2"


def test_a_token_that_keeps_failing_returns_the_401_after_one_retry(bmc):
    url, srv = bmc(sessions=True, reject_tokens=True)
    h = Http(url, "admin", PASSWORD, timeout=5)
    r = h.request("GET", "/redfish/v1/Systems")
    assert r.status == 401
    assert _requests(srv).count(("POST", "/redfish/v1/SessionService/Sessions")) == 2  # one re-login, no loop
    assert all(e["auth"] is None for e in srv.log)  # and no Basic auth behind the session's back


def test_logout_never_sends_the_token_to_another_host(bmc):
    url, srv = bmc(sessions=True, location="https://evil.example/redfish/v1/SessionService/Sessions/7")
    with Http(url, "admin", PASSWORD, timeout=5) as h:
        h.get_json("/redfish/v1/Systems")
        assert h.session_uri == "/redfish/v1/SessionService/Sessions/7"  # from the body's @odata.id instead
    assert srv.log[-1]["method"] == "DELETE"


def test_root_behind_auth_uses_the_well_known_sessions_path_in_session_mode(bmc):
    url, srv = bmc(sessions=True, root_status=401)
    with Http(url, "admin", PASSWORD, timeout=5, auth="session") as h:
        h.get_json("/redfish/v1/Systems")
    assert ("POST", "/redfish/v1/SessionService/Sessions") in _requests(srv)
    url, srv = bmc(sessions=True, root_status=401)
    with Http(url, "admin", PASSWORD, timeout=5) as h:  # auto: Basic auth
        h.get_json("/redfish/v1/Systems")
        assert h.auth_used == "basic"


def test_no_user_no_auth_at_all(bmc):
    url, srv = bmc(sessions=True)
    Http(url, timeout=5).request("GET", "/redfish/v1/Systems")
    assert _requests(srv) == [("GET", "/redfish/v1/Systems")] and srv.log[0]["auth"] is None


def test_bad_options():
    with pytest.raises(ValueError, match="auth must be one of auto, session, basic"):
        Http("https://h", auth="token")
    with pytest.raises(TypeError, match="unknown option"):
        Http("https://h", verify=False)


def test_redfish_message():
    assert redfish_message({"error": {"@Message.ExtendedInfo": [{"Message": "m1"}], "message": "m2"}}) == "m1"
    assert redfish_message({"error": {"message": "m2"}}) == "m2"
    assert redfish_message(["x"]) == "" and redfish_message(None) == ""


# ------------------------------------------------------------------------------------------ TLS and ca_path


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("openssl not installed")
    d = tmp_path_factory.mktemp("tls")
    crt, key, other = d / "bmc.crt", d / "bmc.key", d / "other.crt"
    for cert, cn in ((crt, "127.0.0.1"), (other, "other")):
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key if cert == crt else d / "o.key"),
             "-out", str(cert), "-days", "1", "-subj", "/CN=%s" % cn, "-addext", "subjectAltName=IP:127.0.0.1"],
            check=True, capture_output=True,
        )  # fmt: skip
    srv = ThreadingHTTPServer(("127.0.0.1", 0), FakeRedfish)
    srv.daemon_threads = True
    srv.cfg = {"sessions": True, "live": set()}
    srv.log = []
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(crt), str(key))
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield "https://127.0.0.1:%d" % srv.server_address[1], crt, other
    srv.shutdown()
    srv.server_close()


def test_ca_path_verifies_the_certificate(tls_server):
    url, crt, other = tls_server
    with Http(url, "admin", PASSWORD, ca_path=str(crt), timeout=5) as h:
        assert h.get_json("/redfish/v1/Systems") and h.auth_used == "session"
    with pytest.raises(HttpError, match="CERTIFICATE_VERIFY_FAILED") as ei:
        Http(url, "admin", PASSWORD, timeout=5).get_json("/redfish/v1/Systems")  # system trust store
    assert ei.value.status is None and PASSWORD not in str(ei.value)
    with pytest.raises(HttpError, match="CERTIFICATE_VERIFY_FAILED"):
        Http(url, "admin", PASSWORD, ca_path=str(other), timeout=5).get_json("/redfish/v1/Systems")
    with Http(url, "admin", PASSWORD, validate_certs=False, timeout=5) as h:
        assert h.get_json("/redfish/v1/Systems")


def test_ca_path_must_be_a_file(tmp_path):
    with pytest.raises(HttpError, match="is not a file"):
        Http("https://h", ca_path=str(tmp_path / "missing.pem"))
    with pytest.raises(HttpError, match="is not a file"):
        Http("https://h", ca_path=str(tmp_path))
