"""The PEP 517 build backend of `pip install .`: CMake builds libptxdsl.so (and, where the
installing Python has torch or jax, libptxdsl_torch.so or libptxdsl_jax.so), and a wheel is
written with the standard library: the package runtime/python/ptxdsl with the libraries beside
its files.

Environment: PTXDSL_BUILD_DIR (CMake's build folder; default build-pip/ in the source tree, kept
so that a reinstall builds only what changed), PTXDSL_CMAKE_ARGS (more configure arguments, split
as a shell would), PTXDSL_BUILD_JOBS (parallel jobs; default the CPU count)."""

import base64
import hashlib
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sysconfig
import sys
import zipfile

SOURCE = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = SOURCE / "runtime" / "python" / "ptxdsl"
NAME = "ptxdsl"


def _version():
    """The project's version, as CMakeLists.txt's project() states it."""
    text = (SOURCE / "CMakeLists.txt").read_text()
    found = re.search(r"project\(\s*ptxdsl\s+VERSION\s+([0-9.]+)", text)
    if found is None:
        raise RuntimeError("CMakeLists.txt has no project(ptxdsl VERSION x.y.z)")
    return found.group(1)


def _clean_env():
    """The environment for CMake: pip's isolated build environment hides the installing Python's
    site-packages through PYTHONPATH; without it, CMake's probe sees torch where it is installed."""
    env = dict(os.environ)
    for name in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHOME"):
        env.pop(name, None)
    return env


def _run(args, env):
    print("ptxdsl_build:", " ".join(shlex.quote(str(a)) for a in args), flush=True)
    subprocess.run([str(a) for a in args], check=True, env=env, cwd=SOURCE)


def _build():
    """Builds the libraries; returns {name in the wheel: file}."""
    build = pathlib.Path(os.environ.get("PTXDSL_BUILD_DIR") or SOURCE / "build-pip")
    env = _clean_env()
    generator = ["-G", "Ninja"] if shutil.which("ninja") and not (build / "Makefile").exists() \
        else []
    _run(["cmake", "-S", SOURCE, "-B", build, *generator, "-DCMAKE_BUILD_TYPE=Release",
          "-DPTXDSL_BUILD_TESTS=OFF", "-DPTXDSL_BUILD_TOOLS=OFF", "-DPTXDSL_BUILD_EXAMPLES=OFF",
          f"-DPython3_EXECUTABLE={sys.executable}",
          *shlex.split(os.environ.get("PTXDSL_CMAKE_ARGS", ""))], env)
    targets = ["ptxdsl_c"]
    native_dir = build / "runtime" / "python" / "native"
    # The compiled parts CMake configured: torch's fast path and jax's FFI handlers, where found.
    natives = [n for n in ("ptxdsl_torch", "ptxdsl_jax")
               if (native_dir / "CMakeFiles" / f"{n}.dir").is_dir()]
    targets += natives
    jobs = os.environ.get("PTXDSL_BUILD_JOBS") or str(os.cpu_count() or 1)
    _run(["cmake", "--build", build, "--target", *targets, "--parallel", jobs], env)
    files = {"libptxdsl.so": build / "runtime" / "capi" / "libptxdsl.so"}
    for n in natives:
        files[f"lib{n}.so"] = native_dir / f"lib{n}.so"
    return {name: path.resolve() for name, path in files.items()}


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _tag():
    return "py3-none-" + re.sub(r"[-.]", "_", sysconfig.get_platform())


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    libraries = _build()
    dist_info = f"{NAME}-{version}.dist-info"
    wheel = pathlib.Path(wheel_directory) / f"{NAME}-{version}-{_tag()}.whl"
    entries = [(f"{NAME}/{p.name}", p.read_bytes()) for p in sorted(PACKAGE.glob("*.py"))]
    entries += [(f"{NAME}/{name}", path.read_bytes()) for name, path in libraries.items()]
    entries.append((f"{dist_info}/METADATA", (
        f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\n"
        "Summary: Layer norm and RMS norm kernels written in a C++ PTX DSL, from Python and "
        "PyTorch\nRequires-Python: >=3.9\n").encode()))
    entries.append((f"{dist_info}/WHEEL", (
        f"Wheel-Version: 1.0\nGenerator: ptxdsl_build\nRoot-Is-Purelib: false\n"
        f"Tag: {_tag()}\n").encode()))
    record = [_record_line(name, data) for name, data in entries]
    record.append(f"{dist_info}/RECORD,,")
    entries.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            # Libraries keep their execute bit; sources are plain files.
            info.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return wheel.name
