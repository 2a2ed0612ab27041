# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one small HTTPS helper of the collection (Redfish), on ``ansible.module_utils.urls.Request``.

What it adds to ``Request``: Redfish session auth (a session token instead of Basic auth on every request, the
session deleted at the end), JSON in and out, a size cap, ``@odata.nextLink`` pagination, redirects returned
and never followed, and one error type (:class:`HttpError`) that never contains the password or the token.
TLS verification, ``ca_path`` (a PEM file of CA certificates), proxies and the connection itself are
``Request``'s. Runs on managed nodes (shipped by AnsiballZ with ``ansible.module_utils.urls``) and on the
controller (Python 3.8+). Parsing stays in the Ansible-free ``_redfish``.

Auth (``auth``):

* ``session``: POST ``{UserName, Password}`` to the service's Sessions collection (the service root's
  ``Links.Sessions``, else ``/redfish/v1/SessionService/Sessions``), send ``X-Auth-Token`` afterwards, log in
  again once when a request answers 401 (the session expired), DELETE the session in :meth:`Http.close`.
  A service without a SessionService is an error.
* ``basic``: HTTP Basic auth on every request.
* ``auto`` (default): ``session`` when the service root names a SessionService (or Sessions link), else
  ``basic``; a Sessions collection that answers 404/405/501 to the login also falls back to ``basic``.
  Bad credentials (401/403 on the login) are an error, never retried with Basic auth.
"""

from __future__ import annotations

import json
import os
import ssl
import urllib.error
import urllib.parse
from typing import Any, Dict, List, Optional

from ansible.module_utils.urls import ConnectionError as UrlsConnectionError
from ansible.module_utils.urls import Request

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils._common import MAX_INPUT_BYTES
from ansible_collections.gpuops.cluster.plugins.module_utils._files import decode

AUTH_MODES = ("auto", "session", "basic")
SESSIONS_PATH = "/redfish/v1/SessionService/Sessions"
USER_AGENT = "gpuops.cluster"


class HttpError(Exception):
    """A request failed: ``status`` is the HTTP status, or None for connection errors and timeouts."""

    def __init__(self, message: str, url: str, status: Optional[int] = None, body: Any = None, timed_out=False):
        super().__init__(message)
        self.message = message
        self.url = url
        self.status = status
        self.body = body
        self.timed_out = timed_out

    def __str__(self) -> str:
        return "%s: %s" % (self.url, self.message)


class Response:
    __slots__ = ("headers", "json", "status", "text", "url")

    def __init__(self, url: str, status: int, headers: Dict[str, str], text: str) -> None:
        self.url = url
        self.status = status
        self.headers = headers
        self.text = text
        self.json: Any = None
        if text.strip():
            try:
                self.json = _safejson.loads(text, what="%s body" % url)
            except ValueError:  # not JSON, or over the budget (nested too deep): no document
                self.json = None

    def header(self, name: str) -> Optional[str]:
        for k, v in self.headers.items():
            if k.lower() == name.lower():
                return v
        return None


def redfish_message(doc: Any) -> str:
    """The message of a Redfish error body (``error.@Message.ExtendedInfo[0].Message`` or ``error.message``)."""
    err = doc.get("error") if isinstance(doc, dict) else None
    if not isinstance(err, dict):
        return ""
    info = err.get("@Message.ExtendedInfo")
    if isinstance(info, list) and info and isinstance(info[0], dict) and info[0].get("Message"):
        return str(info[0]["Message"])[:200]
    return str(err.get("message") or "")[:200]


class Http:
    """``Http("https://10.0.0.5", user, password, ca_path="/etc/pki/bmc-ca.pem").get_json("/redfish/v1")``.

    Use it as a context manager (or call :meth:`close`) so that a session is deleted at the end.
    ``auth_used`` says what authenticated the requests: ``session``, ``basic`` or None (no user, or not yet).
    """

    #: keyword options besides the connection: ``auth`` (AUTH_MODES) and ``max_bytes`` (the response size cap)
    OPTIONS = {"auth": "auto", "max_bytes": MAX_INPUT_BYTES}

    def __init__(
        self,
        base_url: str,
        user: Optional[str] = None,
        password: Optional[str] = None,
        validate_certs: bool = True,
        timeout: float = 30.0,
        ca_path: Optional[str] = None,
        **options: Any,
    ) -> None:
        unknown = sorted(set(options) - set(self.OPTIONS))
        if unknown:
            raise TypeError("Http: unknown option(s) %s" % ", ".join(unknown))
        opts = dict(self.OPTIONS, **options)
        auth = opts["auth"]
        if auth not in AUTH_MODES:
            raise ValueError("auth must be one of %s, got %r" % (", ".join(AUTH_MODES), auth))
        self.base_url = base_url.rstrip("/")
        if ca_path and not os.path.isfile(ca_path):
            raise HttpError("ca_path %r is not a file (a PEM bundle of CA certificates)" % ca_path, self.base_url)
        self.timeout = timeout
        self.max_bytes = int(opts["max_bytes"])
        self.auth = auth
        self.auth_used: Optional[str] = None
        self._user = user
        self._password = password
        self._token: Optional[str] = None
        self.session_uri: Optional[str] = None
        self._request = Request(
            validate_certs=validate_certs,
            ca_path=ca_path or None,
            timeout=timeout,
            follow_redirects="none",  # returned, not followed: credentials must not travel to another host
            http_agent=USER_AGENT,
            use_netrc=False,
        )

    def __enter__(self) -> Http:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def url(self, path: str) -> str:
        if path.startswith("http://") or path.startswith("https://"):
            return path
        if not path.startswith("/"):
            path = "/" + path
        return self.base_url + path

    # ------------------------------------------------------------------------------------------ transport
    def _send(self, method: str, url: str, body: Any, headers: Dict[str, str], basic: bool) -> Response:
        """One request through ``Request.open``; any HTTP status is a Response, transport errors raise."""
        hdrs = {"Accept": "application/json", "OData-Version": "4.0"}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers)
        creds = {}
        if basic:
            creds = {"url_username": self._user, "url_password": self._password or "", "force_basic_auth": True}
        try:
            resp = self._request.open(method.upper(), url, data=data, headers=hdrs, **creds)
        except urllib.error.HTTPError as exc:  # any non-2xx status, and a redirect (not followed)
            resp = exc
        except (urllib.error.URLError, UrlsConnectionError, OSError, ValueError, ssl.SSLError) as exc:
            reason = getattr(exc, "reason", exc)
            timed_out = isinstance(reason, TimeoutError) or "timed out" in str(reason)
            raise HttpError("%s %s failed: %s" % (method.upper(), url, reason), url, timed_out=timed_out) from None
        status = getattr(resp, "status", None) or resp.getcode()
        try:
            raw = resp.read(self.max_bytes + 1) or b""
        except (TimeoutError, OSError, AttributeError) as exc:
            raise HttpError("reading the response failed: %s" % exc, url, timed_out="timed out" in str(exc)) from None
        finally:
            try:
                resp.close()
            except OSError:
                pass
        if len(raw) > self.max_bytes:
            raise HttpError("response over %d bytes" % self.max_bytes, url, status)
        headers = dict(resp.headers.items()) if resp.headers is not None else {}
        return Response(url, int(status or 0), headers, decode(raw))

    # ------------------------------------------------------------------------------------------ sessions
    def _sessions_path(self) -> Optional[str]:
        """The Sessions collection the service root names, or None when it names no SessionService."""
        root = self._send("GET", self.url("/redfish/v1"), None, {}, basic=False)
        doc = root.json if 200 <= root.status < 300 and isinstance(root.json, dict) else None
        if doc is None:  # a root behind auth (not Redfish-conformant): the well-known path, in session mode
            return SESSIONS_PATH if self.auth == "session" else None
        link = Http.link(doc.get("Links"), "Sessions")
        if link:
            return link
        return SESSIONS_PATH if Http.link(doc, "SessionService") else None

    def _login(self) -> None:
        """Create a session (or settle on Basic auth in ``auto`` mode); sets ``auth_used``."""
        path = self._sessions_path() if self.auth != "basic" else None
        if path is None:
            if self.auth == "session":
                raise HttpError("auth=session: the service has no SessionService", self.url("/redfish/v1"))
            self.auth_used = "basic"
            return
        url = self.url(path)
        r = self._send("POST", url, {"UserName": self._user, "Password": self._password or ""}, {}, basic=False)
        if self.auth == "auto" and r.status in (404, 405, 501):
            self.auth_used = "basic"
            return
        token = r.header("X-Auth-Token")
        if not 200 <= r.status < 300 or not token:
            why = "HTTP %d%s" % (r.status, (": " + redfish_message(r.json)) if redfish_message(r.json) else "")
            raise HttpError(
                "session login failed (%s)" % (why if r.status >= 300 else "no X-Auth-Token"), url, r.status
            )
        self._token = token
        self.session_uri = self._same_origin(r.header("Location")) or self._same_origin(Http.link(r.json, "@odata.id"))
        self.auth_used = "session"

    def _same_origin(self, uri: Optional[str]) -> Optional[str]:
        """``uri`` when it is a path or a URL on this service (the token is sent there to log out), else None."""
        if not uri:
            return None
        parsed = urllib.parse.urlsplit(uri)
        if not parsed.scheme and not parsed.netloc:
            return uri if uri.startswith("/") else None
        base = urllib.parse.urlsplit(self.base_url)
        return uri if (parsed.scheme, parsed.netloc) == (base.scheme, base.netloc) else None

    def close(self) -> bool:
        """Delete the session (if one was created); True when the service accepted the DELETE. Never raises."""
        token, uri = self._token, self.session_uri
        self._token = self.session_uri = None
        if not token or not uri:
            return False
        try:
            r = self._send("DELETE", self.url(uri), None, {"X-Auth-Token": token}, basic=False)
        except HttpError:
            return False
        return 200 <= r.status < 300

    # ------------------------------------------------------------------------------------------ requests
    def request(self, method: str, path: str, body: Any = None, headers: Optional[Dict[str, str]] = None) -> Response:
        """One request. Returns the Response for any HTTP status; raises HttpError on transport errors."""
        url = self.url(path)
        if self._user is None:
            return self._send(method, url, body, dict(headers or {}), basic=False)
        if self.auth_used is None:
            self._login()
        for attempt in (1, 2):
            hdrs = dict(headers or {})
            if self.auth_used == "session":
                hdrs["X-Auth-Token"] = self._token or ""
            r = self._send(method, url, body, hdrs, basic=self.auth_used == "basic")
            if r.status != 401 or self.auth_used != "session" or attempt == 2:
                return r
            self._token = self.session_uri = None  # expired: log in again, once
            self._login()
        return r  # pragma: no cover - the loop always returns

    def get_json(self, path: str) -> Dict[str, Any]:
        """GET a JSON object; raises HttpError for non-2xx statuses and non-object bodies."""
        r = self.request("GET", path)
        if not 200 <= r.status < 300:
            raise HttpError("HTTP %d" % r.status, r.url, r.status, r.json)
        if not isinstance(r.json, dict):
            raise HttpError("response is not a JSON object", r.url, r.status)
        return r.json

    def post_json(self, path: str, body: Any) -> Response:
        return self.request("POST", path, body)

    def get_members(self, path: str, max_members: int = 10000, max_pages: int = 1000) -> List[Dict[str, Any]]:
        """Members of a collection, following ``Members@odata.nextLink`` / ``@odata.nextLink`` pages.

        ``Members`` is trusted over ``Members@odata.count``. A page seen twice ends the walk.
        """
        members: List[Dict[str, Any]] = []
        seen = set()
        nxt: Optional[str] = path
        pages = 0
        while nxt and nxt not in seen and pages < max_pages and len(members) < max_members:
            seen.add(nxt)
            pages += 1
            doc = self.get_json(nxt)
            page = doc.get("Members")
            if isinstance(page, list):
                members.extend(m for m in page if isinstance(m, dict))
            link = doc.get("Members@odata.nextLink") or doc.get("@odata.nextLink")
            nxt = link if isinstance(link, str) and link else None
        return members[:max_members]

    @staticmethod
    def link(doc: Any, key: str) -> Optional[str]:
        """``doc[key]['@odata.id']`` or None."""
        if not isinstance(doc, dict):
            return None
        v = doc.get(key)
        if isinstance(v, dict):
            v = v.get("@odata.id")
        return v if isinstance(v, str) and v else None


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/")] + [urllib.parse.quote(p.strip("/"), safe="/") for p in parts])
