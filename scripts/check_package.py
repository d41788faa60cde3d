"""Build taskq's sdist and wheel, check them, and run a smoke test of the wheel installed
(not editable) into a fresh venv: what a user who runs ``pip install taskq`` gets.

    python scripts/check_package.py [--workdir DIR] [--keep]

1. ``python -m build --sdist --wheel --no-isolation`` (setuptools and wheel are dev
   dependencies: no download), then ``twine check --strict`` on both;
2. the sdist holds the sources a wheel is built from (the .sql files, the templates and
   static files, py.typed, the Django management commands);
3. a fresh venv (no pip of its own) gets the wheel with ``pip --python VENV install
   --no-deps``; the dependencies are the dev venv's, seen through a ``.pth`` line (a
   plain path: the dev venv's editable taskq, whose hook is itself a ``.pth`` file, is
   not loaded): offline, a few seconds;
4. in that venv: ``taskq --version``; ``import taskq`` is the installed copy; the package
   data is there; ``taskq migrate`` + an enqueue + ``taskq.testing.drain`` on SQLite; the
   pytest plugin's fixtures in a pytest run of a test file of its own.

Exits 0 when every check passed, else 1 with the failing step's output. ``make test``
runs it (tests/acceptance/test_package.py).
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import textwrap
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = [sys.executable, "-m", "build", "--sdist", "--wheel", "--no-isolation"]
PIP = [sys.executable, "-m", "pip"]

#: files each distribution must carry (a glob relative to the package or source root)
WHEEL_DATA = (
    "taskq/py.typed",
    "taskq/store/postgres/postgres.sql",
    "taskq/store/sqlite/sqlite.sql",
    "taskq/store/migrations/postgres/0001_initial.sql",
    "taskq/store/migrations/sqlite/0001_initial.sql",
    "taskq/store/schema/postgres.sql",
    "taskq/store/schema/sqlite.sql",
    "taskq/web/templates/base.html",
    "taskq/web/static/htmx.min.js",
    "taskq/web/static/style.css",
    "taskq/contrib/django/management/commands/taskq_worker.py",
    "taskq/testing/plugin.py",
)

SMOKE = """
import pathlib, sys
import taskq
from taskq.testing import drain

here = pathlib.Path(taskq.__file__).resolve()
assert str(here).startswith(sys.prefix), f"taskq imported from {{here}}, not the venv"
root = here.parent
for name in {data!r}:
    assert (root.parent / name).is_file(), f"{{name}} is not installed"

registry = taskq.Registry()

@registry.actor
def add(a: int, b: int) -> int:
    return a + b

with taskq.Client({dsn!r}) as client:
    job = client.enqueue(add, 2, 3)
    runs = drain(client, registry=registry)
    assert [r.state for r in runs] == ["succeeded"], runs
    assert client.get(job).result == 5
print("smoke: ok", here)
"""

PLUGIN_TEST = """
def test_the_fixtures_come_from_the_installed_plugin(taskq_client, taskq_dsn):
    import taskq
    assert taskq_dsn.startswith("sqlite:///")
    assert isinstance(taskq_client, taskq.Client)
"""


def step(
    title: str,
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> str:
    """Run one check; its stdout, or exit 1 with its output."""
    print(f"check_package: {title}", flush=True)
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
    if done.returncode != 0:
        print(done.stdout + done.stderr, file=sys.stderr)
        raise SystemExit(f"check_package: {title} failed (exit {done.returncode})")
    return done.stdout


def check(work: Path) -> None:
    dist = work / "dist"
    # built from a copy of what a build reads: setuptools writes build/ and *.egg-info
    # next to the sources, which must not be shared with a concurrent run (or an IDE)
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    shutil.copytree(ROOT / "src", source / "src", ignore=ignore)
    step(
        "build the sdist and the wheel",
        [*BUILD, "--outdir", str(dist), str(source)],
    )
    wheels = glob.glob(str(dist / "*.whl"))
    sdists = glob.glob(str(dist / "*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, os.listdir(dist)
    step("twine check", [sys.executable, "-m", "twine", "check", "--strict", *wheels, *sdists])

    names = set(zipfile.ZipFile(wheels[0]).namelist())
    missing = [n for n in WHEEL_DATA if n not in names]
    assert not missing, f"the wheel lacks {missing}"
    with tarfile.open(sdists[0]) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    missing = [n for n in WHEEL_DATA if f"src/{n}" not in members]
    assert not missing, f"the sdist lacks {missing}"

    venv = work / "venv"
    step("a fresh venv", [sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # the dependencies: the dev venv's site-packages as a plain path (its .pth files,
    # among them the editable taskq's, are not processed from there)
    ours = sysconfig.get_paths()["purelib"]
    Path(purelib, "taskq-check-deps.pth").write_text(ours + "\n")
    step(
        "install the wheel (not editable)",
        [*PIP, "--python", str(python), "install", "--no-deps", "--no-index", wheels[0]],
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TASKQ_", "PYTHON"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    version = step("taskq --version", [str(venv / "bin" / "taskq"), "--version"], env=env)
    assert version.startswith("taskq "), version
    dsn = f"sqlite:///{work / 'smoke.sqlite3'}"
    step("taskq migrate", [str(venv / "bin" / "taskq"), "--dsn", dsn, "migrate"], env=env, cwd=work)
    out = step(
        "enqueue and drain on SQLite",
        [str(python), "-c", SMOKE.format(data=WHEEL_DATA, dsn=dsn)],
        env=env,
        cwd=work,
    )
    assert "smoke: ok" in out, out
    tests = work / "plugin_check"
    tests.mkdir()
    (tests / "test_plugin.py").write_text(textwrap.dedent(PLUGIN_TEST))
    (tests / "pytest.ini").write_text("[pytest]\n")
    out = step(
        "the pytest plugin",
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)],
        env=env,
        cwd=tests,
    )
    assert "1 passed" in out, out
    print("check_package: every check passed", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", help="where to build (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    ns = parser.parse_args()
    work = Path(ns.workdir or tempfile.mkdtemp(prefix="taskq-package-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        check(work)
    finally:
        if not ns.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
