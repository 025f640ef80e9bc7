"""A tiny trajectory config, planted documents, and one trained run shared by a module's tests."""

from __future__ import annotations

import numpy as np
import pytest

from geoprobe.trajectory import TrajectoryConfig

#: 2 layers, d_model 32, 2 heads (8 rotary dimensions a head), a 300-token BPE, 4 sequences of 16 tokens
TINY = dict(
    layers=2, hidden_size=32, heads=2, vocab_size=300, seq_len=16, batch_size=4, heldout_every=5, eval_windows=4
)
N_WORDS = 20  # the planted language's words


def planted_documents(n_docs: int = 40, length: int = 60, seed: int = 0) -> list[str]:
    """Documents of a deterministic word chain: word i is always followed by word (7·i + 3) mod 20 (a
    permutation), so the next word is a function of the current one. Each document starts at a random word;
    a model that learns the chain predicts every word after the first, while the words' own (unigram)
    entropy is about ln 20 ≈ 3.0 nats."""
    rng = np.random.default_rng(seed)
    docs = []
    for _ in range(n_docs):
        w, words = int(rng.integers(N_WORDS)), []
        for _ in range(length):
            words.append(f"w{w:02d}")
            w = (7 * w + 3) % N_WORDS
        docs.append(" ".join(words))
    return docs


def tiny(**changes) -> TrajectoryConfig:
    return TrajectoryConfig(**{**TINY, **changes})


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A 9-step run on planted documents (checkpoints 0, 1, 2, 4, 8, 9) and its directory."""
    from geoprobe.trajectory import train_trajectory

    out = tmp_path_factory.mktemp("trajectory")
    result = train_trajectory(tiny(steps=9), out=out, documents=planted_documents(), threads=1)
    return result, out
