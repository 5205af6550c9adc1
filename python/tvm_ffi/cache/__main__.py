"""``python -m tvm_ffi.cache``: see :mod:`tvm_ffi.cache._cli`."""

import sys

from ._cli import main

sys.exit(main())
