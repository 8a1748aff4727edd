"""Finding the ``gpu-trace`` executable that came with this package."""

import os
import shutil
import sys
import sysconfig

NAME = "gpu-trace"


def find_gpu_trace_bin():
    """The path of the ``gpu-trace`` executable: the one installed with this
    package (its scheme's scripts folder: the venv's ``bin``, or the user's
    with ``pip install --user``), else the first on PATH. Raises
    FileNotFoundError when there is none."""
    dirs = [sysconfig.get_path("scripts")]
    user_scheme = "%s_user" % os.name
    if user_scheme in sysconfig.get_scheme_names():
        dirs.append(sysconfig.get_path("scripts", scheme=user_scheme))
    # A wheel installed with --target or --prefix: its scripts sit in bin/
    # beside the folder that holds this package.
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dirs.append(os.path.join(here, "bin"))
    dirs.append(os.path.dirname(sys.executable))
    for d in dirs:
        if d:
            p = os.path.join(d, NAME)
            if os.path.isfile(p) and os.access(p, os.X_OK):
                return p
    p = shutil.which(NAME)
    if p:
        return p
    raise FileNotFoundError(
        "the gpu-trace executable was not found (looked in %s and on PATH); "
        "install it with `pip install gpu-trace`" % ", ".join(d for d in dirs if d)
    )
