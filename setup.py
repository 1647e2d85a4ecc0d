"""The extension memplan._memplan, built by CMake (pyproject.toml says how to install).

The build tree is MEMPLAN_BUILD_DIR, or build/pip beside this file: configured once (Release, no
tests, tools or benchmarks are needed, only the library and the module), then built incrementally,
so a second `pip install .` after a change rebuilds only what changed.
"""
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.path.abspath(os.environ.get("MEMPLAN_BUILD_DIR") or os.path.join(ROOT, "build", "pip"))
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            subprocess.check_call([
                "cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                "-DMEMPLAN_BUILD_TESTS=OFF", "-DMEMPLAN_BUILD_BENCHMARKS=OFF", "-DMEMPLAN_BUILD_PYTHON=ON",
                # The interpreter pip runs under (a venv's python is Debian's, with its headers).
                "-DPython_EXECUTABLE=" + sys.executable,
            ])
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "memplan_python", "-j", str(os.cpu_count() or 1)])
        built = os.path.join(build_dir, "python", "memplan")
        names = [f for f in os.listdir(built) if f.startswith("_memplan.") and f.endswith(".so")]
        if len(names) != 1:
            raise RuntimeError("memplan: expected one _memplan*.so in %s, found %s" % (built, names))
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(built, names[0]), target)


setup(ext_modules=[Extension("memplan._memplan", sources=[])], cmdclass={"build_ext": CMakeBuild})
