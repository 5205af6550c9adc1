"""Small wheels written directly (no build backend), for installer tests that run offline."""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from pathlib import Path


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def write_wheel(
    folder: Path,
    name: str,
    version: str,
    files: dict[str, bytes | str],
    requires: tuple[str, ...] = (),
) -> Path:
    """Writes ``<name>-<version>-py3-none-any.whl`` into ``folder`` holding ``files``
    (path in the wheel -> content) and declaring ``requires`` (PEP 508 lines)."""
    dist = re.sub(r"[-_.]+", "_", name)
    info = f"{dist}-{version}.dist-info"
    metadata = "\n".join(
        ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
        + [f"Requires-Dist: {r}" for r in requires]
    )
    wheel = (
        "Wheel-Version: 1.0\nGenerator: tests/helpers/wheels.py\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n"
    )
    entries = {
        **{k: v.encode() if isinstance(v, str) else v for k, v in files.items()},
        f"{info}/METADATA": (metadata + "\n").encode(),
        f"{info}/WHEEL": wheel.encode(),
    }
    record = [f"{path},{_record_hash(data)},{len(data)}" for path, data in entries.items()]
    record.append(f"{info}/RECORD,,")
    entries[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    out = Path(folder) / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in entries.items():
            zf.writestr(path, data)
    return out
