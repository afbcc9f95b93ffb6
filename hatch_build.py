"""Build hook: compiles the body path's C helpers (``pipelines/ingest/_divergence.c``) into the package.

Why a hook: hatchling builds pure-Python wheels; this one file of C is the only compiled code, and
setuptools' ``build_ext`` knows each platform's compiler and flags. An editable install (``make``'s
``pip install -e``) builds the module in place, beside its source; a wheel carries it. Without a C
compiler the build goes on with a warning: ``pipelines/ingest/fingerprints.py`` then uses its Python
definitions, which give the same answers more slowly (bench/README.md, "The divergence compiled").
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MODULE = "pipelines.ingest._divergence"
SOURCE = "pipelines/ingest/_divergence.c"


def compile_module(root: Path, out_dir: Path) -> Path:
    """Compile ``SOURCE`` under ``root`` into ``out_dir`` (as its package path); returns the built file."""
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    dist = Distribution({"ext_modules": [Extension(MODULE, [str(root / SOURCE)], extra_compile_args=["-O2"])]})
    command = build_ext(dist)
    command.build_lib = str(out_dir)
    command.build_temp = str(out_dir / "temp")
    command.ensure_finalized()
    command.run()
    return Path(command.get_ext_fullpath(MODULE))


class CompileHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        root = Path(self.root)
        with tempfile.TemporaryDirectory() as scratch:
            try:
                built = compile_module(root, Path(scratch))
            except Exception as error:  # no compiler, no Python headers: the Python definitions serve
                print(f"cachemeter: the C helpers were not built ({error}); using the Python ones", file=sys.stderr)
                return
            relative = Path(*MODULE.split(".")[:-1]) / built.name
            if version == "editable":  # the package is imported from the source tree
                (root / relative).write_bytes(built.read_bytes())
            else:
                kept = Path(self.directory) / "compiled" / built.name
                kept.parent.mkdir(parents=True, exist_ok=True)
                kept.write_bytes(built.read_bytes())
                build_data["force_include"][str(kept)] = str(relative)
                build_data["pure_python"] = False
                build_data["infer_tag"] = True
