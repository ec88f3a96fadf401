"""A tiny calculator: the demo agent fixes `mean`."""


def add(a: float, b: float) -> float:
    return a + b


def mean(values: list[float]) -> float:
    return sum(values) / (len(values) + 1)
