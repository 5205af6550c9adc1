"""Signatures of remote cache entries (see docs/dev/remote_cache.md, "Trust").

Whoever can write to a shared cache can run code on every host that loads from it, so an
entry is loaded only when it carries a signature made with the operator's key. A signer is
anything with ``name`` (the scheme, stored with the signature), ``sign(data) -> str`` and
``verify(data, signature) -> bool``; :class:`HmacSigner` (HMAC-SHA256, the standard
library's) serves a private fleet, and a signing service (a KMS, sigstore) plugs in through
:func:`set_signer` with an object of that shape.
"""

from __future__ import annotations

import hashlib
import hmac
import os

__all__ = ["KEY_ENV", "KEY_FILE_ENV", "HmacSigner", "configured_signer", "set_signer"]

KEY_ENV = "TVM_FFI_REMOTE_CACHE_KEY"
KEY_FILE_ENV = "TVM_FFI_REMOTE_CACHE_KEY_FILE"
_installed: list[object] = []


class HmacSigner:
    """HMAC-SHA256 with a shared secret: every host that verifies can also sign, which a
    private fleet with one operator accepts (a signing service separates the two)."""

    name = "hmac-sha256"

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError(
                f"{KEY_ENV}/{KEY_FILE_ENV}: the signing key must be at least 16 bytes "
                f"(got {len(key)})"
            )
        self._key = key

    def sign(self, data: bytes) -> str:
        return hmac.new(self._key, data, hashlib.sha256).hexdigest()

    def verify(self, data: bytes, signature: str) -> bool:
        return hmac.compare_digest(self.sign(data), signature)


def set_signer(signer: object | None) -> None:
    """Use ``signer`` (``name``, ``sign``, ``verify``) for this process's remote cache
    instead of the key the environment names; None goes back to the environment."""
    _installed.clear()
    if signer is not None:
        for attr in ("name", "sign", "verify"):
            if not hasattr(signer, attr):
                raise TypeError(f"set_signer: the signer has no {attr!r} (got {signer!r:.80})")
        _installed.append(signer)


def configured_signer() -> object | None:
    """The signer set by :func:`set_signer`, else an HMAC signer with the key of
    ``TVM_FFI_REMOTE_CACHE_KEY`` (the text) or ``TVM_FFI_REMOTE_CACHE_KEY_FILE`` (a file
    holding it), else None."""
    if _installed:
        return _installed[0]
    text = os.environ.get(KEY_ENV, "")
    if text:
        return HmacSigner(text.encode())
    path = os.environ.get(KEY_FILE_ENV, "")
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            key = f.read().strip()
    except OSError as err:
        raise OSError(
            err.errno, f"{KEY_FILE_ENV}={path!r}: cannot read the key: {err.strerror}"
        ) from None
    return HmacSigner(key)
