"""Build the C cores of iosets.replay and iosets.arbiter.

Environment switches: IOSETS_DEBUG=1 builds with -O0 -g and assertions;
IOSETS_SANITIZE=1 adds AddressSanitizer and UBSan.
"""

import glob
import os

from setuptools import Extension, setup

REPLAY_SOURCES = sorted(glob.glob("iosets/replay/src/*.c"))
ARBITER_SOURCES = sorted(glob.glob("iosets/arbiter/src/*.c"))

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
            sources=REPLAY_SOURCES,
            include_dirs=["iosets/replay/src"],
            extra_compile_args=compile_args,
            extra_link_args=link_args,
        ),
        Extension(
            "iosets.arbiter._core",
            sources=ARBITER_SOURCES,
            include_dirs=["iosets/arbiter/src"],
            extra_compile_args=compile_args,
            extra_link_args=link_args,
        ),
    ]
)
