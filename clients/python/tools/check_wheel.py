"""Checks the SDK's wheel as `make package-python` built it: run with the
python of a fresh venv where the wheel (and requirements.txt) is installed.

Usage: check_wheel.py WHEEL

- the wheel holds the nri_grpc package and its metadata, nothing else (no
  tests, no tools, no examples), with py.typed, the generated code and
  nri.binpb (what reflection serves);
- nri_grpc imports from the venv, not from the source tree, and its version
  is the wheel's: the file name, the metadata and nri_grpc.__version__ agree;
- the installed package serves what it should: reflection's descriptors load
  (nri.binpb with its comments) and a Plugin can be built.
"""

import importlib.metadata
import os
import sys
import zipfile


def main() -> int:
    (wheel,) = sys.argv[1:]
    name = os.path.basename(wheel)
    dist, version = name.split("-")[:2]
    problems = []

    with zipfile.ZipFile(wheel) as z:
        files = z.namelist()
    tops = {f.split("/", 1)[0] for f in files}
    if tops != {"nri_grpc", f"{dist}-{version}.dist-info"}:
        problems.append(f"the wheel's top-level entries are {sorted(tops)}, want nri_grpc and its dist-info")
    for want in (
        "nri_grpc/__init__.py",
        "nri_grpc/_version.py",
        "nri_grpc/py.typed",
        "nri_grpc/reflection.py",
        "nri_grpc/gen/nri/v1beta1/plugin_service_pb2.py",
        "nri_grpc/gen/nri/v1beta1/plugin_service_pb2.pyi",
        "nri_grpc/gen/nri/v1beta1/plugin_service_pb2_grpc.py",
        "nri_grpc/gen/nri/v1beta1/nri.binpb",
    ):
        if want not in files:
            problems.append(f"the wheel lacks {want}")
    stray = [f for f in files if "__pycache__" in f or f.endswith((".pyc", ".orig", ".rej", "~"))]
    if stray:
        problems.append(f"stray files in the wheel: {stray}")

    import nri_grpc
    from nri_grpc import reflection

    here = os.path.realpath(nri_grpc.__file__)
    if os.path.realpath(sys.prefix) not in here:
        problems.append(f"nri_grpc was imported from {here}, not from the venv {sys.prefix}")
    meta = importlib.metadata.version("nri-grpc")
    if not (meta == version == nri_grpc.__version__):
        problems.append(f"versions differ: wheel {version}, metadata {meta}, nri_grpc.__version__ {nri_grpc.__version__}")
    if nri_grpc.NRI_VERSION != f"python-sdk {nri_grpc.PROTOCOL} nri-grpc/{meta}":
        problems.append(f"NRI_VERSION is {nri_grpc.NRI_VERSION!r}")
    protos = reflection.descriptor_set().file
    plugin_file = next((f for f in protos if f.name == "nri/v1beta1/plugin_service.proto"), None)
    if plugin_file is None or not plugin_file.source_code_info.location:
        problems.append("nri.binpb lacks nri/v1beta1/plugin_service.proto with its comments")
    reflection.plugin_descriptors().file_containing_symbol("nri.v1beta1.PluginService")

    class Handlers:
        def run_pod_sandbox(self, req, ctx):
            return None

    nri_grpc.Plugin(Handlers(), name="wheel-check", index="10")

    for p in problems:
        print(f"check_wheel: {name}: {p}", file=sys.stderr)
    if not problems:
        print(f"check_wheel: {name}: ok ({len(files)} files, version {version}, {nri_grpc.NRI_VERSION})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
