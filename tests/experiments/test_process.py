"""Process settings: seeding makes draws repeat, a method's unset random_state gets the seed,
and the thread limit reaches torch or, before torch is imported, its environment variables."""

from __future__ import annotations

import random
import sys

import numpy as np
import pytest

from adaptable.experiments.process import limit_threads, seed_everything, seed_method


def test_seed_everything_repeats_python_and_numpy_draws() -> None:
    seed_everything(7)
    first = (random.random(), np.random.rand())
    seed_everything(7)
    assert (random.random(), np.random.rand()) == first
    seed_everything(2**32 + 7)  # numpy takes the seed modulo 2**32
    assert np.random.rand() == first[1]


class _Method:
    def __init__(self, random_state=None) -> None:
        self.random_state = random_state

    def get_params(self, deep: bool = False) -> dict:
        return {"random_state": self.random_state}

    def set_params(self, **params) -> None:
        self.random_state = params["random_state"]


def test_seed_method_fills_only_an_unset_random_state() -> None:
    unset, fixed = _Method(), _Method(random_state=3)
    seed_method(unset, 5, {})
    seed_method(fixed, 5, {})
    assert (unset.random_state, fixed.random_state) == (5, 3)
    chosen = _Method()
    seed_method(chosen, 5, {"random_state": None})  # the options decide
    assert chosen.random_state is None
    seed_method(object(), 5, {})  # a method without parameters is left alone


def test_limit_threads_before_torch_sets_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    limit_threads(3)
    import os

    assert (os.environ["OMP_NUM_THREADS"], os.environ["MKL_NUM_THREADS"]) == ("3", "3")


def test_limit_threads_after_torch_sets_its_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    class FakeTorch:
        def get_num_threads(self) -> int:
            return 4

        def set_num_threads(self, n: int) -> None:
            calls.append(n)

    monkeypatch.setitem(sys.modules, "torch", FakeTorch())
    limit_threads(2)
    limit_threads(4)  # already so: nothing to do
    limit_threads(0)  # 0 leaves the process as it is
    assert calls == [2]
