"""pip's build of the asyncrl Python package (pyproject.toml).

Builds the extension module and train_a3c with CMake (the build folder
$ASYNCRL_BUILD_DIR, default build/ beside this file, reused when it is
already configured), then puts the package, the module and train_a3c (as
asyncrl/bin/train_a3c, which asyncrl.train starts) in the wheel. Needs what
scripts/install-deps.sh installs."""

import os
import re
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.abspath(os.environ.get("ASYNCRL_BUILD_DIR",
                                       os.path.join(ROOT, "build")))


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(asyncrl VERSION ([0-9.]+)",
                         f.read()).group(1)


class BuildWithCMake(build_ext):
    def run(self):
        # ASYNCRL_SKIP_BUILD=1: package what BUILD holds as it is (the test
        # suite's pip test, which must not relink what other tests run).
        if os.environ.get("ASYNCRL_SKIP_BUILD") != "1":
            if not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")):
                subprocess.check_call(["cmake", "-S", ROOT, "-B", BUILD, "-G",
                                       "Ninja", "-DCMAKE_BUILD_TYPE=Release"])
            subprocess.check_call(["cmake", "--build", BUILD, "--target",
                                   "asyncrl_python", "train_a3c"])
        built = os.path.join(BUILD, "python", "asyncrl")
        package = os.path.join(self.build_lib, "asyncrl")
        os.makedirs(os.path.join(package, "bin"), exist_ok=True)
        for name in os.listdir(built):
            if name.endswith(".py") or name.endswith(".so"):
                shutil.copy2(os.path.join(built, name), package)
        shutil.copy2(os.path.join(BUILD, "apps", "train_a3c"),
                     os.path.join(package, "bin", "train_a3c"))
        with open(os.path.join(package, "_paths.py"), "w") as f:
            f.write("import os\n\nTRAIN_A3C = os.path.join(os.path.dirname("
                    "os.path.abspath(__file__)), 'bin', 'train_a3c')\n")


class BinaryDistribution(Distribution):
    """A platform wheel: the package holds a compiled module."""

    def has_ext_modules(self):
        return True


setup(
    version=version(),
    packages=[],
    py_modules=[],
    cmdclass={"build_ext": BuildWithCMake},
    distclass=BinaryDistribution,
    options={"build": {"build_base": os.path.join(BUILD, "pip")},
             "egg_info": {"egg_base": BUILD}},
)
