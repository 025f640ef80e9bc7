import pytest
import torch

from geoprobe.errors import UnsupportedArchitectureError
from geoprobe.models.adapters import Layout, NeoXAdapter, Site, adapter_for, supported_architectures


def test_site_validates_kind_and_layer():
    with pytest.raises(ValueError):
        Site(0, "values")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Site(-1, "v")


def test_every_family_has_an_adapter_with_distinct_hooks():
    archs = supported_architectures()
    for a in ("GPTNeoXForCausalLM", "PhiForCausalLM", "LlamaForCausalLM", "MistralForCausalLM",
              "MixtralForCausalLM", "Gemma3ForCausalLM"):
        assert a in archs
    names = {adapter_for("LlamaForCausalLM").hook_name(Site(3, k)) for k in ("q", "k", "v", "z", "pattern")}
    assert len(names) == 5 and all(n.startswith("blocks.3.attn.") for n in names)
    assert adapter_for("Gemma3ForCausalLM").hook_name(Site(1, "k")) == "blocks.1.attn.hook_k_normed"


def test_unsupported_architecture_names_the_supported_ones():
    with pytest.raises(UnsupportedArchitectureError, match="GPTNeoXForCausalLM") as e:
        adapter_for("BertForMaskedLM")
    assert "\n" not in str(e.value) and "BertForMaskedLM" in str(e.value)


def test_layout_kv_group_maps_query_heads_to_kv_heads():
    lay = Layout(n_layers=2, n_heads=9, n_kv_heads=3, d_head=64, d_model=576, vocab_size=10, rotary_dim=64,
                 sliding_window=(None, None))
    assert lay.kv_group == (0, 0, 0, 1, 1, 1, 2, 2, 2)
    assert Layout.from_dict(lay.to_dict()) == lay
    with pytest.raises(ValueError):
        Layout(n_layers=1, n_heads=9, n_kv_heads=2, d_head=1, d_model=1, vocab_size=1, rotary_dim=1, sliding_window=(None,))


class _Fused(torch.nn.Module):
    """A stand-in GPT-NeoX layer whose fused QKV rows are planted: row value = 100*head + 10*part + dim."""

    def __init__(self, heads: int, d_head: int, d_model: int):
        super().__init__()
        w = torch.zeros(heads * 3 * d_head, d_model)
        for h in range(heads):
            for part in range(3):
                for d in range(d_head):
                    w[(h * 3 + part) * d_head + d] = 100 * h + 10 * part + d
        self.attention = torch.nn.Module()
        self.attention.query_key_value = torch.nn.Linear(d_model, heads * 3 * d_head)
        self.attention.query_key_value.weight.data = w


def test_neox_key_weights_take_the_per_head_key_block():
    heads, d_head, d_model = 3, 2, 4
    model = torch.nn.Module()
    model.gpt_neox = torch.nn.Module()
    model.gpt_neox.layers = torch.nn.ModuleList([_Fused(heads, d_head, d_model)])

    class Cfg:
        num_attention_heads, hidden_size, num_hidden_layers, vocab_size, rotary_pct = heads, 6, 1, 10, 1.0

    Cfg.hidden_size = heads * d_head  # d_head = hidden/heads = 2
    adapter = NeoXAdapter()
    cfg = Cfg()
    # d_model for the layout is hidden_size; our planted weight has d_model columns = 4, so build layout by hand
    adapter.layout = lambda c: Layout(1, heads, heads, d_head, d_model, 10, d_head, (None,))  # type: ignore[method-assign]
    wk = adapter.key_weights(model, cfg)  # (1, heads, d_model, d_head)
    assert wk.shape == (1, heads, d_model, d_head)
    for h in range(heads):
        for d in range(d_head):
            assert torch.all(wk[0, h, :, d] == 100 * h + 10 * 1 + d), (h, d)
