"""One arena per toy and test module: its repository and state folder are shared by the module's attacks,
so the base's test run is computed once (cached per base commit) and every later attack reads it."""

from __future__ import annotations

import pytest

from tests.gaming.arena import Arena
from tests.gaming.informed_attacks import DOCTEST, ON_THE_PATH
from tests.gaming.other_attacks import CARGO, GO, JEST, MOCHA, NPM
from tests.gaming.python_attacks import PYTHON, UNITTEST

TOYS = {"python": PYTHON, "npm": NPM, "cargo": CARGO, "go": GO, "mocha": MOCHA, "jest": JEST, "unittest": UNITTEST,
        "doctest": DOCTEST, "on-the-path": ON_THE_PATH}


@pytest.fixture(scope="module")
def arena(request, tmp_path_factory) -> Arena:
    toy = TOYS[request.module.TOY]
    return Arena(toy, tmp_path_factory.mktemp(toy.name))
