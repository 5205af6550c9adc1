"""Authentication to an OCI registry, as the distribution spec's challenges ask for it: a
401 with ``WWW-Authenticate: Basic`` is answered with the user and password, one with
``Bearer realm=...,service=...,scope=...`` with a token from the realm (see
docs/dev/remote_cache.md, "Registry authentication").

Credentials come from ``TVM_FFI_REMOTE_CACHE_OCI_USER`` with ``_PASSWORD`` or
``_PASSWORD_FILE``, else from the ``auths`` entry of Docker's ``config.json``. Credential
helpers (``credHelpers``, ``credsStore``) are never run: they are programs a file names.
"""

from __future__ import annotations

import base64
import dataclasses
import http.client
import json
import os
import re
import stat
import time
import urllib.parse

from .. import _log

__all__ = ["Credentials", "Session", "credentials"]

USER_ENV = "TVM_FFI_REMOTE_CACHE_OCI_USER"
PASSWORD_ENV = "TVM_FFI_REMOTE_CACHE_OCI_PASSWORD"
PASSWORD_FILE_ENV = "TVM_FFI_REMOTE_CACHE_OCI_PASSWORD_FILE"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
_DEFAULT_EXPIRY = 60.0  # seconds a token lives when the realm does not say (the spec's)
#: (host, scope) -> (Authorization header, monotonic expiry) for this process.
_tokens: dict[tuple[str, str], tuple[str, float]] = {}


@dataclasses.dataclass(frozen=True)
class Credentials:
    basic: str  # base64 of "user:password", or "" with an identity token
    identity_token: str  # Docker's OAuth2 refresh token, or ""
    source: str  # where they came from, for messages (never the secret itself)


def _password_file(path: str) -> str:
    try:
        mode = os.stat(path).st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise PermissionError(
                f"{PASSWORD_FILE_ENV}={path!r}: the password file is readable by group or "
                f"others (mode {stat.S_IMODE(mode):o}); run: chmod 600 {path}"
            )
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except PermissionError:
        raise
    except OSError as err:
        raise OSError(
            err.errno, f"{PASSWORD_FILE_ENV}={path!r}: cannot read the password: {err.strerror}"
        ) from None


def _docker_config() -> str:
    folder = os.environ.get("DOCKER_CONFIG") or os.path.join(os.path.expanduser("~"), ".docker")
    return os.path.join(folder, "config.json")


def _entry_host(key: str) -> str:
    # Docker writes "host:port", "https://host/v1/" or "host/path" as keys.
    return urllib.parse.urlsplit(key if "://" in key else "//" + key).netloc


def credentials(netloc: str) -> Credentials | None:
    """The credentials for registry ``netloc`` (``host[:port]``), or None (anonymous)."""
    user = os.environ.get(USER_ENV, "")
    if user:
        password = os.environ.get(PASSWORD_ENV, "")
        source = f"{USER_ENV} and {PASSWORD_ENV}"
        if not password and os.environ.get(PASSWORD_FILE_ENV):
            password = _password_file(os.environ[PASSWORD_FILE_ENV])
            source = f"{USER_ENV} and {PASSWORD_FILE_ENV}"
        if not password:
            raise ValueError(
                f"{USER_ENV} is set but neither {PASSWORD_ENV} nor {PASSWORD_FILE_ENV}"
            )
        return Credentials(base64.b64encode(f"{user}:{password}".encode()).decode(), "", source)
    path = _docker_config()
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: cannot read Docker's configuration: {err}") from None
    for key, entry in (config.get("auths") or {}).items():
        if _entry_host(key) == netloc and isinstance(entry, dict):
            basic, token = entry.get("auth") or "", entry.get("identitytoken") or ""
            if basic or token:
                return Credentials(basic, token, f"the auths entry for {key} in {path}")
    helper = (config.get("credHelpers") or {}).get(netloc) or config.get("credsStore")
    if helper:
        _log.warn(
            f"tvm_ffi.cpp: {path} names the credential helper docker-credential-{helper} "
            f"for {netloc}; tvm_ffi runs no credential helper: export {USER_ENV} and "
            f"{PASSWORD_ENV} (or {PASSWORD_FILE_ENV}) instead; trying {netloc} anonymously"
        )
    return None


def _challenge(header: str) -> tuple[str, dict[str, str]]:
    scheme, _, rest = header.strip().partition(" ")
    return scheme.lower(), dict(re.findall(r'(\w+)="([^"]*)"', rest))


class Session:
    """The Authorization header for each request to one registry, answering its
    challenges; tokens are shared by every Session of the process until they expire."""

    def __init__(self, netloc: str, hostname: str, timeout: float) -> None:
        self.netloc, self._loopback, self._timeout = netloc, hostname in LOOPBACK, timeout
        self._credentials = credentials(netloc)

    @property
    def source(self) -> str:
        return self._credentials.source if self._credentials else "no credentials (anonymous)"

    def header(self, scope: str) -> str | None:
        """The Authorization header already known for ``scope``, if any."""
        for key in ((self.netloc, scope), (self.netloc, "")):  # "": Basic, any scope
            found = _tokens.get(key)
            if found and found[1] > time.monotonic():
                return found[0]
        return None

    def answer(self, challenge: str, scope: str) -> str | None:
        """The Authorization header that answers ``challenge`` for ``scope``; None when
        there is nothing to answer with (Basic without credentials)."""
        scheme, params = _challenge(challenge)
        if scheme == "basic":
            if self._credentials is None or not self._credentials.basic:
                return None
            value = f"Basic {self._credentials.basic}"
            _tokens[(self.netloc, "")] = (value, float("inf"))
            return value
        if scheme != "bearer" or "realm" not in params:
            raise OSError(f"{self.netloc}: unsupported authentication challenge {challenge!r}")
        token, lifetime = self._token(params["realm"], params.get("service", ""), scope)
        value = f"Bearer {token}"
        _tokens[(self.netloc, scope)] = (value, time.monotonic() + lifetime)
        return value

    def _token(self, realm: str, service: str, scope: str) -> tuple[str, float]:
        parts = urllib.parse.urlsplit(realm)
        # A token request carries the password: never over plain HTTP, except from a registry
        # on this machine to a realm on this machine (nothing crosses a network there).
        local = self._loopback and parts.hostname in LOOPBACK
        if parts.scheme != "https" and not (parts.scheme == "http" and local):
            raise OSError(f"{self.netloc}: refusing the token realm {realm!r} (not https://)")
        conn_type = http.client.HTTPSConnection if parts.scheme == "https" else (
            http.client.HTTPConnection)  # fmt: skip
        query = {k: v for k, v in (("service", service), ("scope", scope)) if v}
        creds, headers, method, body = self._credentials, {}, "GET", None
        if creds is not None and creds.identity_token:  # OAuth2 refresh token (Docker's)
            form = dict(query, client_id="tvm-ffi", grant_type="refresh_token",
                        refresh_token=creds.identity_token)  # fmt: skip
            method, body = "POST", urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            target = parts.path or "/"
        else:
            if creds is not None:
                headers["Authorization"] = f"Basic {creds.basic}"
            sep = "&" if parts.query else ""
            target = f"{parts.path or '/'}?{parts.query}{sep}{urllib.parse.urlencode(query)}"
        conn = conn_type(parts.netloc, timeout=self._timeout)
        try:
            conn.request(method, target, body=body, headers=headers)
            response = conn.getresponse()
            status, data = response.status, response.read()
        finally:
            conn.close()
        if status in (401, 403):
            raise PermissionError(self.failed(status))
        if status != 200:
            raise OSError(f"token request to {realm}: HTTP {status} (expected 200)")
        reply = json.loads(data)
        token = reply.get("token") or reply.get("access_token")
        if not token:
            raise OSError(f"token request to {realm}: no token in the reply")
        return token, float(reply.get("expires_in") or _DEFAULT_EXPIRY)

    def failed(self, status: int) -> str:
        return f"authentication failed for {self.netloc} (HTTP {status}) with {self.source}"
