"""One set of pins: `pip install -r requirements.txt` (the app) picks the versions the test suite ran with.

requirements-runtime.txt (included by requirements.txt and requirements-dev.txt) applies constraints.txt with -c.
These tests walk the installed distributions' own requirements from the files' names (scripts/pins.py): every
package the app's install reaches is pinned there, at the version installed here, where the tests run.
"""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("pins", ROOT / "scripts" / "pins.py")
pins = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pins)


def test_constraints_are_the_tested_environment():
    """constraints.txt is what requirements-dev.txt brings here, name for name and version for version."""
    assert pins.read() == pins.pins(), "run `python scripts/pins.py` after changing a pin, and say why"


def test_the_apps_install_is_pinned_to_the_tested_versions():
    """Every package requirements.txt reaches (transformers, boto3, IPython through bertviz...) has a pin, equal to
    the installed version; both requirement files apply the constraints (requirements-runtime.txt's -c)."""
    pinned = pins.read()
    app = pins.closure(pins.requirements("requirements.txt"))
    assert {"torch", "transformers", "streamlit", "bertviz", "boto3", "ipython"} <= set(app)
    assert {n: v for n, v in app.items() if pinned.get(n) != v} == {}
    runtime = (ROOT / "requirements-runtime.txt").read_text().splitlines()
    assert "-c constraints.txt" in runtime and "transformers==5.23.0" in " ".join(runtime)
    for name in ("requirements.txt", "requirements-dev.txt"):
        assert "-r requirements-runtime.txt" in (ROOT / name).read_text().splitlines(), name
    for req in pins.requirements("requirements-dev.txt"):  # a direct pin never contradicts the constraints
        if req.specifier:
            assert pinned[pins.canonicalize_name(req.name)] in req.specifier, req


def _project_dependencies() -> dict[str, Requirement]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    return {pins.canonicalize_name(r.name): r for r in map(Requirement, deps)}


def test_the_package_needs_what_the_app_needs():
    """`pip install bert-explorer` (a wheel, a clone, git+) brings every package requirements-runtime.txt names, and
    names nothing the app's pins leave out: the two lists are one list (an installed app's class join imports
    confusables; a package missing from either list breaks one way of installing the app)."""
    project = _project_dependencies()
    runtime = {pins.canonicalize_name(r.name): r for r in pins.requirements("requirements-runtime.txt")}
    assert sorted(set(runtime) - set(project)) == [], "add these to pyproject's [project] dependencies"
    assert sorted(set(project) - set(runtime)) == [], "pin these in requirements-runtime.txt"
    for name, req in project.items():  # the pinned (tested) version satisfies the package's range
        pinned = next(iter(runtime[name].specifier)).version
        assert req.specifier.contains(pinned, prereleases=True), (req, pinned)
