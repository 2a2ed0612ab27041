# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one small HTTPS helper of the collection (Redfish): urllib, timeout, basic auth, JSON, pagination.

Errors never contain the password. Runs on managed nodes and on the controller (Python 3.8+). No Ansible imports.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import MAX_INPUT_BYTES, decode


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
                self.json = json.loads(text)
            except ValueError:
                self.json = None

    def header(self, name: str) -> Optional[str]:
        for k, v in self.headers.items():
            if k.lower() == name.lower():
                return v
        return None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are returned, not followed: a redirect must not carry the Authorization header elsewhere."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: PLR0913
        return None


class Http:
    """``Http("https://10.0.0.5:443", user, password, validate_certs=False).get_json("/redfish/v1")``."""

    def __init__(
        self,
        base_url: str,
        user: Optional[str] = None,
        password: Optional[str] = None,
        validate_certs: bool = True,
        timeout: float = 30.0,
        ca_path: Optional[str] = None,
        max_bytes: int = MAX_INPUT_BYTES,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._auth = None
        if user is not None:
            token = base64.b64encode(("%s:%s" % (user, password or "")).encode("utf-8")).decode("ascii")
            self._auth = "Basic " + token
        if validate_certs:
            self._ctx = ssl.create_default_context(cafile=ca_path) if ca_path else ssl.create_default_context()
        else:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            self._ctx = ctx
        self._opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=self._ctx), _NoRedirect())

    def url(self, path: str) -> str:
        if path.startswith("http://") or path.startswith("https://"):
            return path
        if not path.startswith("/"):
            path = "/" + path
        return self.base_url + path

    def request(self, method: str, path: str, body: Any = None, headers: Optional[Dict[str, str]] = None) -> Response:
        """One request. Returns the Response for any HTTP status; raises HttpError on transport errors."""
        url = self.url(path)
        hdrs = {"Accept": "application/json", "OData-Version": "4.0"}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            hdrs["Content-Type"] = "application/json"
        if self._auth:
            hdrs["Authorization"] = self._auth
        hdrs.update(headers or {})
        req = urllib.request.Request(url, data=data, headers=hdrs, method=method.upper())
        try:
            resp = self._opener.open(req, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            resp = exc
        except (TimeoutError, OSError, ValueError, ssl.SSLError) as exc:
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
