from __future__ import annotations

import base64
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils._http import Http, HttpError, join

PASSWORD = "s3cr3t-Pa55"
SEEN = []


def _page(n, link_key):
    doc = {
        "@odata.id": "/c",
        "Members": [{"@odata.id": "/c/%d" % (2 * n + i)} for i in range(2)],
        "Members@odata.count": 1,
    }
    if n < 2:
        doc[link_key] = "/c?page=%d" % (n + 1)
    return doc


#: path -> (status, body, headers) of the fake BMC (paged "/c..." answers are computed)
ROUTES = {
    "/redfish/v1": (200, {"@odata.id": "/redfish/v1", "Systems": {"@odata.id": "/redfish/v1/Systems"}}, None),
    "/loop": (200, {"Members": [{"@odata.id": "/x"}], "Members@odata.nextLink": "/loop"}, None),
    "/text": (200, b"<html>not json</html>", None),
    "/list": (200, [1, 2], None),
    "/redirect": (302, b"", {"Location": "http://127.0.0.1:1/elsewhere"}),
    "/slow": (200, {}, None),
    "/big": (200, b"x" * 5000, None),
}
NOT_FOUND = (404, {"error": {"code": "Base.1.0.ResourceMissingAtURI"}}, None)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, code, body, headers=None):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except OSError:  # the client gave up (timeout test)
            pass

    def do_GET(self):  # noqa: N802
        SEEN.append((self.path, self.headers.get("Authorization")))
        p = self.path
        if p.startswith("/c"):
            n = int(p.split("=")[1]) if "=" in p else 0
            return self._send(200, _page(n, "Members@odata.nextLink" if n % 2 == 0 else "@odata.nextLink"))
        if p == "/slow":
            time.sleep(1.5)
        status, body, headers = ROUTES.get(p, NOT_FOUND)
        return self._send(status, body, headers)

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"null")
        self._send(202, {"got": body, "ctype": self.headers.get("Content-Type")}, {"Location": "/tasks/1"})


@pytest.fixture(scope="module")
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def test_get_json_sends_basic_auth(server):
    SEEN.clear()
    h = Http(server, "admin", PASSWORD, timeout=5)
    assert h.get_json("/redfish/v1")["Systems"]["@odata.id"] == "/redfish/v1/Systems"
    path, auth = SEEN[-1]
    assert path == "/redfish/v1"
    assert base64.b64decode(auth.split()[1]).decode() == "admin:" + PASSWORD
    assert Http.link(h.get_json("redfish/v1"), "Systems") == "/redfish/v1/Systems"


def test_no_auth_header_without_user(server):
    SEEN.clear()
    Http(server, timeout=5).get_json("/redfish/v1")
    assert SEEN[-1][1] is None


def test_pagination_both_link_styles(server):
    members = Http(server, timeout=5).get_members("/c")
    # 3 pages of 2, count says 1: Members is trusted over Members@odata.count
    assert [m["@odata.id"] for m in members] == ["/c/%d" % i for i in range(6)]
    assert len(Http(server, timeout=5).get_members("/c", max_members=3)) == 3


def test_pagination_loop_stops(server):
    assert len(Http(server, timeout=5).get_members("/loop")) == 1


def test_http_errors(server):
    h = Http(server, "admin", PASSWORD, timeout=5)
    with pytest.raises(HttpError) as ei:
        h.get_json("/missing")
    assert ei.value.status == 404 and ei.value.body["error"]["code"].endswith("ResourceMissingAtURI")
    with pytest.raises(HttpError) as ei:
        h.get_json("/text")
    assert ei.value.status == 200 and "not a JSON object" in str(ei.value)
    with pytest.raises(HttpError):
        h.get_json("/list")
    r = h.request("GET", "/redirect")
    assert r.status == 302 and r.header("location") == "http://127.0.0.1:1/elsewhere"


def test_post_json(server):
    r = Http(server, timeout=5).post_json(
        "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate", {"ImageURI": "x"}
    )
    assert r.status == 202 and r.header("Location") == "/tasks/1"
    assert r.json == {"got": {"ImageURI": "x"}, "ctype": "application/json"}


def test_timeout_and_size_limit(server):
    with pytest.raises(HttpError) as ei:
        Http(server, timeout=0.3).get_json("/slow")
    assert ei.value.timed_out and ei.value.status is None
    with pytest.raises(HttpError) as ei:
        Http(server, timeout=5, max_bytes=1000).get_json("/big")
    assert "over 1000 bytes" in str(ei.value)


def test_connection_refused_never_leaks_password():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(HttpError) as ei:
        Http("https://127.0.0.1:%d" % port, "admin", PASSWORD, timeout=2).get_json("/redfish/v1")
    assert ei.value.status is None
    assert PASSWORD not in str(ei.value) and PASSWORD not in repr(ei.value.__dict__)


def test_urls():  # TLS verification and ca_path: test_http_sessions.py (a real TLS server)
    assert Http("https://h/").url("/redfish/v1") == "https://h/redfish/v1"
    assert Http("https://h").url("https://other/x") == "https://other/x"
    assert join("/redfish/v1/", "Systems", "a b") == "/redfish/v1/Systems/a%20b"
