"""The local model's threads where no --threads is given: BMOE_THREADS for both, else
one less than the cores for writing and every core for reading a prompt; a value that
is not a whole number above 0 is refused in words, before any model is read."""

from __future__ import annotations

import os

import pytest

from actors.errors import TurnFailed
from actors.model.backends.local import LocalBackend, default_batch_threads, default_threads
from actors.model.discovery.bundled import bundled_model_path


def test_without_bmoe_threads_writing_leaves_a_core_and_reading_takes_them_all(monkeypatch):
    monkeypatch.delenv("BMOE_THREADS", raising=False)
    cores = os.cpu_count() or 1
    assert default_threads() == max(1, cores - 1)
    assert default_batch_threads() == cores


@pytest.mark.parametrize("value", ["1", "3", " 2 "])
def test_bmoe_threads_sets_both(monkeypatch, value):
    monkeypatch.setenv("BMOE_THREADS", value)
    assert default_threads() == default_batch_threads() == int(value)


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_bad_bmoe_threads_is_refused_in_words(monkeypatch, value):
    monkeypatch.setenv("BMOE_THREADS", value)
    for pick in (default_threads, default_batch_threads):
        with pytest.raises(ValueError, match="BMOE_THREADS must be a whole number of threads above 0"):
            pick()


async def test_a_load_under_a_bad_bmoe_threads_fails_with_those_words(monkeypatch):
    monkeypatch.setenv("BMOE_THREADS", "many")
    with pytest.raises(TurnFailed, match="BMOE_THREADS must be a whole number"):
        await LocalBackend.load(bundled_model_path(), n_ctx=512)
