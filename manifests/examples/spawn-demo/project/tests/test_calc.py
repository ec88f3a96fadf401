import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from calc import add, mean  # noqa: E402


def test_add():
    assert add(2, 3) == 5


def test_add_negative():
    assert add(-2, 3) == 1


def test_mean_of_one():
    assert mean([4.0]) == 4.0


def test_mean_of_three():
    assert mean([1.0, 2.0, 6.0]) == 3.0
