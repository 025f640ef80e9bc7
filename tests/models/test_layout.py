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


def _ragged(**kw):
    from geoprobe.models.layout import Heads

    heads = [Heads(4, 2, 16, 16), Heads(4, 2, 16, 16), Heads(8, 8, 16, 40)]
    return Layout.of_layers(
        heads, n_layers=3, d_model=64, vocab_size=10, rotary_dim=0, sliding_window=(None,) * 3, **kw
    )


def test_a_layout_per_layer_keeps_each_layer_and_the_widest():
    from geoprobe.models.layout import Heads

    lay = _ragged()
    assert not lay.uniform
    assert (lay.n_heads, lay.n_kv_heads, lay.d_head, lay.d_qk) == (8, 8, 16, 40)  # the arrays' widths
    assert lay.heads(0) == Heads(4, 2, 16, 16) and lay.heads(-1) == Heads(8, 8, 16, 40)
    assert lay.kv_groups(0) == (0, 0, 1, 1) and lay.kv_groups(2) == tuple(range(8))
    assert lay.kv_group == ()  # one per layer: kv_groups(i)
    back = Layout.from_dict(lay.to_dict())
    assert back == lay and back.heads(2) == Heads(8, 8, 16, 40)
    with pytest.raises(IndexError):
        lay.heads(3)


def test_one_layout_for_every_layer_stores_no_per_layer_list():
    from geoprobe.models.layout import Heads

    lay = Layout.of_layers(
        [Heads(4, 2, 16, 16)] * 2, n_layers=2, d_model=64, vocab_size=10, rotary_dim=0, sliding_window=(None, None)
    )
    assert lay.uniform and "layer_heads" not in lay.to_dict()
    assert lay.heads(1) == Heads(4, 2, 16, 16) and lay.kv_group == (0, 0, 1, 1)


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(layer_heads=((4, 2, 16, 16), (6, 4, 16, 16))), "layer 1: n_heads 6 is not a multiple"),
        (dict(layer_heads=((4, 2, 16, 16),)), "one entry per attention layer"),
        (dict(layer_heads=((4, 2, 16, 16), (4, 2, 16, 16))), "leave it None"),
        (dict(n_heads=8, layer_heads=((4, 2, 16, 16), (2, 2, 8, 8))), "must be the largest"),
    ],
)
def test_per_layer_layouts_are_checked(bad, message):
    base = dict(
        n_layers=2,
        n_heads=4,
        n_kv_heads=2,
        d_head=16,
        d_model=64,
        vocab_size=10,
        rotary_dim=0,
        sliding_window=(None, None),
    )
    with pytest.raises(ValueError, match=message):
        Layout(**{**base, **bad})
