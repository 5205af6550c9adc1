"""An OCI registry as a remote module cache (``oci://host:port/repository``), through the
distribution API v2 with the standard library's HTTP client (no client package: the few
calls below are the whole protocol; TLS for ``oci://`` except on a loopback host, plain
HTTP for ``oci+http://``). An entry is an OCI artifact: a manifest tagged after the entry,
one layer holding the stored entry. A registry has no lock: hosts missing one entry at once
may each build and upload it (the same bytes under the same tag). Authentication (Basic,
Bearer tokens) is _remote_oci_auth's."""

from __future__ import annotations

import hashlib
import http.client
import json
import urllib.parse

from . import _remote_oci_auth

__all__ = ["Backend"]

_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
_CONFIG = "application/vnd.oci.empty.v1+json"
_LAYER = "application/vnd.tvm-ffi.module.v1"


class Backend:
    locks = False

    def __init__(self, url: str, timeout: float) -> None:
        parts = urllib.parse.urlsplit(url)
        self._repo = parts.path.strip("/")
        if not parts.hostname or not self._repo:
            raise ValueError(f"{url!r}: give oci://host[:port]/repository")
        if "@" in parts.netloc:  # a URL ends up in logs and messages: no secret in it
            raise ValueError(
                f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}: credentials "
                f"in the URL are refused; set {_remote_oci_auth.USER_ENV} and "
                f"{_remote_oci_auth.PASSWORD_ENV} (or {_remote_oci_auth.PASSWORD_FILE_ENV})"
            )
        plain = parts.scheme == "oci+http" or parts.hostname in _remote_oci_auth.LOOPBACK
        self._conn_type = http.client.HTTPConnection if plain else http.client.HTTPSConnection
        self._netloc = parts.netloc
        self._timeout = timeout
        self._auth = _remote_oci_auth.Session(parts.netloc, parts.hostname, timeout)

    def _request(self, method: str, path: str, body: bytes | None = None, headers=None):
        """(status, headers, body) of one request, answering an authentication challenge."""
        headers = dict(headers or {})
        actions = "pull" if method in ("GET", "HEAD") else "pull,push"
        scope = f"repository:{self._repo}:{actions}"
        known = self._auth.header(scope)
        if known:
            headers["Authorization"] = known
        status, response, data = self._send(method, path, body, headers)
        challenge = response.getheader("WWW-Authenticate", "")
        if status == 401 and challenge:
            answer = self._auth.answer(challenge, scope)
            if answer is not None and answer != known:
                headers["Authorization"] = answer
                status, response, data = self._send(method, path, body, headers)
        if status == 401 or (status == 403 and "Authorization" in headers):
            raise PermissionError(self._auth.failed(status))
        return status, response, data

    def _send(self, method: str, path: str, body: bytes | None, headers: dict):
        """(status, headers, body) of one request (a new connection: no state to keep)."""
        conn = self._conn_type(self._netloc, timeout=self._timeout)
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response, response.read()
        finally:
            conn.close()

    @staticmethod
    def _tag(name: str) -> str:
        # A tag is [A-Za-z0-9_][A-Za-z0-9._-]{0,127}: an entry name may hold '+' or be long.
        return "e-" + hashlib.sha256(name.encode()).hexdigest()[:62]

    def _manifest(self, name: str, method: str):
        path = f"/v2/{self._repo}/manifests/{self._tag(name)}"
        return self._request(method, path, headers={"Accept": _MANIFEST})

    def get(self, name: str) -> bytes | None:
        status, _, body = self._manifest(name, "GET")
        if status == 404:
            return None
        _expect(status, 200, "GET manifest")
        layers = json.loads(body).get("layers") or [{}]
        digest = layers[0].get("digest", "")
        status, _, blob = self._request("GET", f"/v2/{self._repo}/blobs/{digest}")
        _expect(status, 200, "GET blob")
        return blob  # its digest is checked by the tier's own (signed) digest

    def has(self, name: str) -> bool:
        return self._manifest(name, "HEAD")[0] == 200

    def entries(self) -> list[tuple[str, int]]:
        """(name, stored size) of every entry, by name: a tag names a hash of the entry, so
        each manifest is read for the name its layer carries."""
        status, _, body = self._request("GET", f"/v2/{self._repo}/tags/list")
        if status == 404:  # nothing pushed yet
            return []
        _expect(status, 200, "GET tags")
        found = []
        for tag in json.loads(body).get("tags") or []:
            path = f"/v2/{self._repo}/manifests/{tag}"
            status, _, body = self._request("GET", path, headers={"Accept": _MANIFEST})
            _expect(status, 200, "GET manifest")
            layer = (json.loads(body).get("layers") or [{}])[0]
            name = layer.get("annotations", {}).get("org.opencontainers.image.title")
            if name and self._tag(name) == tag:
                found.append((name, int(layer.get("size", 0))))
        return sorted(found)

    def put(self, name: str, blob: bytes) -> bool:
        if self.has(name):
            return False
        config = b"{}"
        layer = self._upload(blob)
        manifest = {
            "schemaVersion": 2,
            "mediaType": _MANIFEST,
            "config": {"mediaType": _CONFIG, "digest": self._upload(config), "size": len(config)},
            "layers": [{"mediaType": _LAYER, "digest": layer, "size": len(blob),
                        "annotations": {"org.opencontainers.image.title": name}}],
        }  # fmt: skip
        path = f"/v2/{self._repo}/manifests/{self._tag(name)}"
        body = json.dumps(manifest).encode()
        status = self._request("PUT", path, body, {"Content-Type": _MANIFEST})[0]
        _expect(status, 201, "PUT manifest")
        return True

    def _upload(self, data: bytes) -> str:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        if self._request("HEAD", f"/v2/{self._repo}/blobs/{digest}")[0] == 200:
            return digest
        status, response, _ = self._request("POST", f"/v2/{self._repo}/blobs/uploads/")
        _expect(status, 202, "POST blob upload")
        location = urllib.parse.urlsplit(response.getheader("Location", ""))
        query = f"{location.query}&" if location.query else ""
        path = f"{location.path}?{query}digest={urllib.parse.quote(digest)}"
        headers = {"Content-Type": "application/octet-stream"}
        _expect(self._request("PUT", path, data, headers)[0], 201, "PUT blob")
        return digest


def _expect(status: int, wanted: int, what: str) -> None:
    if status != wanted:
        raise OSError(f"{what}: HTTP {status} (expected {wanted})")
