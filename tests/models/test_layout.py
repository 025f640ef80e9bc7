"""Layout and Site: the head layout every analyser reads (the per-family adapters are gone; where
W_K lives in a fused projection is tested per architecture in test_attention.py and test_planted_keys.py)."""

import pytest

from geoprobe.models.layout import Layout, Site


def test_site_validates_kind_and_layer():
    with pytest.raises(ValueError):
        Site(0, "values")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Site(-1, "v")


def test_layout_kv_group_maps_query_heads_to_kv_heads():
    lay = Layout(
        n_layers=2,
        n_heads=9,
        n_kv_heads=3,
        d_head=64,
        d_model=576,
        vocab_size=10,
        rotary_dim=64,
        sliding_window=(None, None),
    )
    assert lay.kv_group == (0, 0, 0, 1, 1, 1, 2, 2, 2)
    assert Layout.from_dict(lay.to_dict()) == lay
    with pytest.raises(ValueError):
        Layout(
            n_layers=1, n_heads=9, n_kv_heads=2, d_head=1, d_model=1, vocab_size=1, rotary_dim=1, sliding_window=(None,)
        )
