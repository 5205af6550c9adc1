"""``python -m tvm_ffi --includedir | --cmakedir | --cxxflags | ... | --version``: the same
as ``python -m tvm_ffi.config``."""

import sys

from .config import main

sys.exit(main())
