"""Which modules are the attention layers (geoprobe/models/layers.py), on tiny twins.

Hybrids whose linear-attention layers are also named *Attention capture their softmax layers
(the census checks them against eager); the rule that leaves a module out is checked both ways
(a softmax inside it, or a config kind shared with the softmax layers, keep it in, and the
model is refused). Attention modules are found by their calls whatever their class name;
modules without a layer number are numbered by the model layer holding them; the decoders of
encoder-decoders, differential and looped attention are refused first, each with its reason.
"""

from __future__ import annotations

import warnings

import pytest
import torch

from geoprobe.errors import UnsupportedArchitectureError
from geoprobe.models import layers as L
from geoprobe.models.architecture import attention_modules, inspect_model, probing
from geoprobe.models.attention import Probe, entropy_bits, final_row_distribution
from geoprobe.models.loading import load_model
from geoprobe.models.tiny import same_weights, tiny_model
from tests.models import census as C


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny twins run fastest on one thread (the census does the same); restored after."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _model(model_type: str, **overrides):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tiny_model(model_type, **overrides)


def _refusal(model) -> UnsupportedArchitectureError:
    with pytest.raises(UnsupportedArchitectureError) as err:
        inspect_model(model)
    return err.value


@pytest.mark.parametrize("model_type", ["minimax", "kimi_linear", "bailing_hybrid"])
def test_hybrids_with_linear_attention_named_attention_capture_their_softmax_layers(model_type):
    model = _model(model_type)
    arch = inspect_model(model)
    kinds = model.config.layer_types
    assert list(arch.layout.model_layers) == [i for i, k in enumerate(kinds) if k == "full_attention"]
    assert any("linear attention" in n for n in arch.notes)
    row = C.classify(model_type)  # every head's entropy = eager, next-token entropy = the model's own
    assert row.status == "captured", row


def test_a_silent_module_that_computes_a_softmax_is_not_left_out():
    model = _model("minimax")
    lightning = model.model.layers[1].self_attn
    forward = lightning.forward

    def with_softmax(*args, **kwargs):
        torch.softmax(torch.zeros(3), -1)
        return forward(*args, **kwargs)

    lightning.forward = with_softmax
    err = _refusal(model)
    assert err.reason == "interface-calls" and "MiniMaxLightningAttention" in str(err)


def test_a_silent_module_of_a_kind_the_softmax_layers_have_is_not_left_out():
    model = _model("minimax")
    model.config.layer_types = ["full_attention"] * len(model.config.layer_types)  # the config no longer says
    err = _refusal(model)
    assert err.reason == "interface-calls" and "MiniMaxLightningAttention" in str(err)


@pytest.mark.parametrize(("model_type", "cls"), [("longcat_flash", "LongcatFlashMLA"), ("moshi", "MoshiAttention")])
def test_attention_modules_are_found_by_their_calls_whatever_their_name(model_type, cls):
    model = _model(model_type)
    assert not any(type(m).__name__ == cls for m in attention_modules(model))  # not found by name
    arch = inspect_model(model)
    assert {type(m).__name__ for m in arch.modules.values()} == {cls}
    assert C.classify(model_type).status == "captured"


def test_longcat_numbers_its_two_attention_sublayers_per_layer_as_the_model_does():
    model = _model("longcat_flash")
    arch = inspect_model(model)
    assert arch.layout.n_layers == 2 * model.config.num_layers
    assert all(m.layer_idx == layer for layer, m in arch.modules.items())


@pytest.mark.parametrize("model_type", ["zamba", "zamba2"])
def test_blocks_without_a_layer_number_are_numbered_by_the_layer_that_holds_them(model_type):
    model = _model(model_type)
    arch = inspect_model(model)
    hybrid = [i for i, k in enumerate(model.config.layers_block_type) if k == "hybrid"]
    assert list(arch.layout.model_layers) == hybrid and len(hybrid) == 2
    for layer, m in arch.modules.items():
        assert getattr(m, "layer_idx", None) in (None, -1)  # the module itself does not say
        assert any(x is m for x in model.model.layers[layer].modules())
    assert C.classify(model_type).status == "captured"


def test_zamba_keys_read_twice_the_hidden_width_so_no_w_k_is_reported():
    arch = inspect_model(_model("zamba"))
    assert all(spec is None for spec in arch.k_specs.values())
    assert arch.key_weights_reason


@pytest.mark.parametrize(
    ("model_type", "overrides"),
    [
        ("bart", {}),
        ("trocr", {}),  # attention computed inline: refused as a decoder first
        ("prophetnet", {}),
        ("whisper", {"activation_function": "gelu"}),  # encoder_outputs, not encoder_hidden_states
        ("gpt2", {"add_cross_attention": True}),
        ("bert", {"is_decoder": True, "add_cross_attention": True}),
    ],
)
def test_decoders_of_encoder_decoders_are_refused_as_such(model_type, overrides):
    err = _refusal(_model(model_type, **overrides))
    assert err.reason == "encoder-decoder", err
    assert "cross-attention" in str(err)


def test_a_decoder_without_cross_attention_is_not_an_encoder_decoder():
    for model_type in ("gpt2", "bert"):
        assert inspect_model(_model(model_type)).layout.n_layers == 3


def test_differential_attention_is_refused_as_such():
    err = _refusal(_model("diffllama"))
    assert err.reason == "differential" and "same queries and keys" in str(err)


@pytest.mark.parametrize("model_type", ["dory", "hrm_text", "inkling2_loop_text"])
def test_looped_layers_are_refused_as_such(model_type):
    err = _refusal(_model(model_type))
    assert err.reason == "looped" and "several depths" in str(err)


def test_rwkv_computes_no_softmax_and_is_refused_as_no_attention():
    err = _refusal(_model("rwkv"))
    assert err.reason == "no-attention" and "compute no softmax" in str(err)


def test_no_model_with_attention_hears_it_is_a_state_space_model():
    err = _refusal(_model("mamba"))
    assert err.reason == "no-attention" and "state-space" in str(err)
    for model_type in ("moshi", "longcat_flash"):  # refused as "no attention layers" before
        inspect_model(_model(model_type))


def test_inkling2_attention_over_earlier_blocks_is_not_a_layer_and_its_sinks_are_per_query():
    model = _model("inkling2_text")
    arch = inspect_model(model)
    assert {type(m).__name__ for m in arch.modules.values()} == {"Inkling2SlidingAttention", "Inkling2FullAttention"}
    assert any("not one per token" in n for n in arch.notes)
    assert C.classify("inkling2_text").status == "captured"


def test_per_query_sinks_take_the_final_query_s_logit():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 4, 8, generator=g), torch.randn(2, 2, 5, 8, generator=g)
    last = torch.tensor([4, 2])
    sinks = torch.randn(2, 4, generator=g)
    p, sink = final_row_distribution(q, k, last, sinks=sinks)
    for b in range(2):
        s = torch.einsum("hd,htd->ht", q[b], k[b].repeat_interleave(2, 0)) * 8**-0.5
        s[:, last[b] + 1 :] = float("-inf")
        full = torch.softmax(torch.cat([s, sinks[b][:, None]], -1), -1)
        # geoprobe's one definition: the distribution over the keys, the sink's mass beside it
        torch.testing.assert_close(p[b], full[:, :-1] / (1 - full[:, -1:]))
        torch.testing.assert_close(sink[b], full[:, -1])


def test_deepseek_v4_compressed_and_selected_keys_equal_eager_past_the_indexer_top_k():
    """40 tokens: the CSA layer compresses every 4 into 10 entries and its indexer keeps 4."""
    model = _model("deepseek_v4")
    arch = inspect_model(model)
    assert any("more keys than tokens" in n for n in arch.notes)
    ids = torch.randint(3, 500, (1, 40), generator=torch.Generator().manual_seed(1))
    probe = Probe()
    probe.new_batch(None)
    with probing(model, arch, probe), torch.no_grad():
        model(ids, use_cache=False)
    with torch.no_grad():
        maps = same_weights(model, "eager")(ids, output_attentions=True, use_cache=False).attentions
    assert maps[-1].shape[-1] > 40  # keys beyond the token positions
    for i, layer in enumerate(arch.layout.model_layers):
        row = maps[i][0, :, -1].double()
        want = entropy_bits(row / row.sum(-1, keepdim=True))  # over the keys: its sinks take the rest
        assert (probe.records[layer].entropy[0].double() - want).abs().max() < 1e-4


def test_per_layer_head_layouts_are_kept_and_named():
    """MiMo-V2-Flash's twin: layer 0 has 2 key/value heads, layers 1-2 have 4; captured with a layout per
    layer (Layout.layer_heads), and the architecture's notes name the groups."""
    from geoprobe.models.layout import Heads

    loaded = load_model("twin:mimo_v2_flash")
    assert loaded.layout.layer_heads == (Heads(4, 2, 16, 16), Heads(4, 4, 16, 16), Heads(4, 4, 16, 16))
    assert (loaded.layout.n_heads, loaded.layout.n_kv_heads) == (4, 4)  # the widest, as the arrays are
    assert any("layers [0]: 4 query heads and 2 key/value heads of width 16" in n for n in loaded.arch.notes)
    text = L.head_layouts([0, 1, 2], [Heads(4, 2, 16, 24), Heads(4, 2, 16, 24), Heads(8, 2, 16, 16)])
    assert text == (
        "layers [0, 1]: 4 query heads and 2 key/value heads of width 24 (values 16); "
        "layers [2]: 8 query heads and 2 key/value heads of width 16"
    )
