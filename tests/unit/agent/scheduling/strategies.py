"""Hypothesis strategies of requirements, and the value universe the property tests probe with."""

from __future__ import annotations

from functools import reduce

from hypothesis import strategies as st

from agent.scheduling.requirement import Requirement

K = "key"
POOL = ["a", "b", "1", "2", "5", "9"]
UNIVERSE = [*POOL, "fresh", "05", "+5", *(str(n) for n in range(-5, 16))]
"""Values to probe with: the pool requirements draw from, integers beyond every bound, a value no
requirement names, and integers written in other ways."""


def base_requirements(key: str = K) -> st.SearchStrategy[Requirement]:
    """A requirement of one operator over the pool, with an optional minValues."""
    values = st.lists(st.sampled_from(POOL), max_size=3, unique=True)
    bound = st.integers(min_value=-1, max_value=10).map(lambda n: [str(n)])
    operator = st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"])
    numeric = st.sampled_from(["Gt", "Lt", "Gte", "Lte"])
    min_values = st.none() | st.integers(min_value=1, max_value=3)

    def build(operator: str, values: list[str], min_values: int | None) -> Requirement:
        return Requirement(key, operator, values, min_values=min_values)

    return st.one_of(
        st.builds(build, operator, values, min_values),
        st.builds(build, numeric, bound, min_values),
    )


def requirements(key: str = K) -> st.SearchStrategy[Requirement]:
    """A requirement as the intersection of one to three base requirements (reaches bounded
    complements with exclusions and crossed bounds)."""
    return st.lists(base_requirements(key), min_size=1, max_size=3).map(
        lambda items: reduce(Requirement.intersection, items)
    )


def exhausted(*items: Requirement) -> bool:
    """Whether complements together allow no integer in a closed range yet no string either
    (the case where Karpenter's intersects and the value sets disagree)."""
    gte = max((r.gte for r in items if r.gte is not None), default=None)
    lte = min((r.lte for r in items if r.lte is not None), default=None)
    if not all(r.complement for r in items) or gte is None or lte is None or gte > lte:
        return False
    excluded = set().union(*(r.values for r in items))
    return all(str(n) in excluded for n in range(gte, lte + 1))
