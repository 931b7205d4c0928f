"""What the tests build once per run (`fresh_venv.once`), built before they ask for it: Binder's
environment (tests/test_binder.py: a fresh venv, pip, postBuild), the documentation site
(tests/docs_site.py: one Sphinx build) and a course made by `init-course` on a fresh machine
(tests/test_init_course.py: a wheel of this checkout, a fresh venv, the workflow's install step).

`.ci/run` starts `python tests/prebuild.py NAME` for each, at the lowest priority (nice 19), beside
the serial pass: that pass runs one test at a time, mostly waiting on its processes, and leaves a
core idle for most of its minute; at nice 19 a build takes only what the serial tests leave, and
the parallel pass, which keeps both cores busy to its end, no longer does the builds. They are made
in the folder MCP_NB_BUILT names, under the lock `once` takes: a test finds the build made, or waits
for it, or, where it failed, fails with its message. Without MCP_NB_BUILT (pytest run by hand) the
tests build as before, in pytest's temporary folder, when first asked.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

import fresh_venv  # tests/ is first on sys.path: this file's folder


def builder(name: str):
    if name == "binder":
        import test_binder

        return test_binder.build
    if name == "docs":
        import docs_site

        return docs_site._build
    if name == "course":
        import test_init_course

        return test_init_course.build_course_machine
    raise SystemExit(f"prebuild.py: no build named {name!r} (binder, docs, course)")


def main(names: list[str]) -> int:
    root = os.environ.get(fresh_venv.BUILT)
    if not root or not Path(root).is_dir():
        raise SystemExit(f"prebuild.py: {fresh_venv.BUILT} must name a folder to build in")
    status = 0
    for name in names:
        try:
            fresh_venv.built_once(Path(root), name, builder(name))
        except BaseException:  # a build that failed left its message for the tests; say it here too
            traceback.print_exc()
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
