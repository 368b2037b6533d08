"""Build the C core of iosets.replay.

Environment switches: IOSETS_DEBUG=1 builds with -O0 -g and assertions;
IOSETS_SANITIZE=1 adds AddressSanitizer and UBSan.
"""

import glob
import os

from setuptools import Extension, setup

SOURCES = sorted(glob.glob("iosets/replay/src/*.c"))

compile_args = ["-std=c11", "-O3", "-Wall", "-Wextra", "-Wno-unused-parameter"]
link_args = []
if os.environ.get("IOSETS_DEBUG"):
    compile_args = ["-std=c11", "-O0", "-g", "-Wall", "-Wextra", "-UNDEBUG"]
if os.environ.get("IOSETS_SANITIZE"):
    compile_args += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    link_args += ["-fsanitize=address,undefined"]

setup(
    ext_modules=[
        Extension(
            "iosets.replay._engine",
            sources=SOURCES,
            include_dirs=["iosets/replay/src"],
            extra_compile_args=compile_args,
            extra_link_args=link_args,
        )
    ]
)
