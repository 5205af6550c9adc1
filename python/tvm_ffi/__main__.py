"""``python -m tvm_ffi --includedir | --cmakedir | --version``: same as tvm_ffi.config."""

import sys

from .config import main

sys.exit(main())
