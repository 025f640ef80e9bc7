"""The census of every causal-LM type of the installed transformers (tests/models/census.py):
nothing wrong, nothing crashing, and every status as docs/models.md's generated table says."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.models import census as C

DOCS = Path(__file__).resolve().parents[2] / "docs" / "models.md"


@pytest.fixture(scope="module")
def rows() -> list[C.Row]:
    return C.census()


def test_every_type_is_classified(rows):
    assert [r.model_type for r in rows] == C.types()
    assert {r.status for r in rows} <= {"captured", "refused", "cannot build", "wrong", "crash"}


def test_nothing_is_wrong_and_nothing_crashes(rows):
    bad = [f"{r.model_type}: {r.status}: {r.detail}" for r in rows if r.status in ("wrong", "crash")]
    assert not bad, "\n".join(bad)


def test_every_refusal_has_a_documented_reason(rows):
    from geoprobe.models.reasons import REASONS

    text = DOCS.read_text()
    for r in rows:
        if r.status == "refused":
            assert r.mechanism in REASONS, r
    for key in REASONS:
        assert f"`{key}`" in text, f"reason {key} is not described in docs/models.md"


def test_the_table_in_docs_is_the_census(rows):
    """Regenerate with: python -m tests.models.census --markdown (and paste between the census markers)."""
    import transformers

    text = DOCS.read_text()
    if C.table_version(text) != transformers.__version__:
        pytest.skip(
            f"docs/models.md's census was generated with transformers {C.table_version(text)}, this is "
            f"{transformers.__version__} (what CI installs is checked there); the census itself ran above"
        )
    table = C.parse(text)
    now = {r.model_type: (r.status, r.mechanism) for r in rows}
    changed = sorted(
        f"{t}: table {table.get(t)}, census {now.get(t)}" for t in set(table) | set(now) if table.get(t) != now.get(t)
    )
    assert not changed, "docs/models.md's census table is out of date:\n" + "\n".join(changed)


def test_the_census_prompts_are_longer_than_every_twins_key_selection():
    """The case that hid DeepSeek-V3.2's and GLM-5's padded indexers: a selection (top-k, window, chunk,
    compression rate) smaller than the prompts, batched with padding. Every tiny twin that declares one
    selects fewer keys than the census's two longer prompts have tokens, so the census's comparison with
    each prompt alone (census._check) reaches it; the types that declare one are listed by name."""
    from types import SimpleNamespace

    from geoprobe.models.tiny import tiny_config
    from geoprobe.models.verify import selection_size

    selecting = {}
    for t in C.types():
        try:
            cfg = tiny_config(t)
            size = selection_size(SimpleNamespace(config=cfg))
        except Exception:  # noqa: BLE001 - not buildable, or no one text config (an encoder-decoder: refused)
            continue
        if size:
            selecting[t] = size
    assert {"deepseek_v32", "glm_moe_dsa", "axk2", "deepseek_v4", "gemma3n_text", "mistral", "llama4_text"} <= set(
        selecting
    )
    too_big = {t: n for t, n in selecting.items() if n >= C.LENGTHS[1]}
    assert not too_big, too_big
