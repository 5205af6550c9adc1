"""Child process of client_env.run_case: ``client_driver.py build|run NAME``.

``build`` builds and loads the case's module through the client's own JIT code; ``run``
then calls the client's API against torch (the device must be one the case runs on, else
the call is reported as skipped). The last stdout line is ``CLIENT-RESULT {json}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback

from client_env import BUILT_TAG, RESULT_TAG

# Hopper is what the suite builds for when no GPU says otherwise.
DEFAULT_CAPABILITY = (9, 0)


def _capability():
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_capability()
    return None


def _arch_context(case, capability):
    """The clients' own ways of naming the target when there is no GPU to detect."""
    if capability is not None:
        return contextlib.nullcontext()
    if case.client == "sglang":
        from sglang.kernels.jit.utils import override_jit_cuda_arch

        return override_jit_cuda_arch(*DEFAULT_CAPABILITY)
    return contextlib.nullcontext()


def main(mode: str, name: str) -> int:
    import client_cases

    case = client_cases.BY_NAME[name]
    capability = _capability()
    if capability is None:
        os.environ.setdefault("FLASHINFER_CUDA_ARCH_LIST", "{}.{}".format(*DEFAULT_CAPABILITY))
    result = {"name": name, "mode": mode, "ok": False}
    try:
        with _arch_context(case, capability):
            module = case.build()
        print(f"{BUILT_TAG}{module!r}", flush=True)
        if mode == "run":
            if case.check is None:
                result["skipped"] = "built and loaded only: no call with a torch reference"
            elif capability is None:
                result["skipped"] = "no CUDA device to call it on"
            elif capability in (case.run_on or ()) or (
                case.run_on is None and capability >= (9, 0)
            ):
                case.check()
                print("matches torch", flush=True)
            else:
                result["skipped"] = f"runs on sm {case.run_on}, this device is sm {capability}"
        result["ok"] = True
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
    print(RESULT_TAG + json.dumps(result), flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
