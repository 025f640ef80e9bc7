"""The shrinking rule (geoprobe/models/shrink.py) on planted configs: sizes become tiny, mechanisms stay.

Each planted dict is what ``config.to_dict()`` gives for a made-up model; the assertions say what a
twin of it must keep (every kind of layer, the layers' differences, switches, unset options) and
what it must change (every size, every token id outside the tiny vocabulary).
"""

from __future__ import annotations

import pytest

from geoprobe.models.shrink import HEAD_DIM, HEADS, VOCAB, WIDTH, shrink

BIG = {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 151_936}


def planted(**kw) -> dict:
    return {**BIG, "num_hidden_layers": 32, **kw}


def test_sizes_become_tiny_and_switches_stay():
    out = shrink(planted(intermediate_size=11008, hidden_act="silu", attention_bias=True, rope_theta=1e6))
    assert (out["hidden_size"], out["num_attention_heads"], out["num_key_value_heads"]) == (WIDTH, HEADS, 2)
    assert out["vocab_size"] == VOCAB and out["intermediate_size"] == 2 * WIDTH
    assert (out["hidden_act"], out["attention_bias"], out["rope_theta"]) == ("silu", True, 1e6)


def test_per_layer_lists_are_cut_to_the_prefix_holding_every_kind():
    layer_types = ["sliding_attention"] * 5 + ["full_attention"]
    mlp = ["dense"] * 2 + ["sparse"] * 30
    out = shrink(planted(layer_types=layer_types * 5 + ["sliding_attention"] * 2, mlp_layer_types=mlp))
    assert out["num_hidden_layers"] == 6
    assert out["layer_types"] == layer_types  # both kinds, in the model's order
    assert out["mlp_layer_types"] == ["dense", "dense", "sparse", "sparse", "sparse", "sparse"]


def test_a_pattern_is_kept_in_whole_periods():
    """Attention + MLP blocks listed as one pattern (Dory): the twin ends on a whole period."""
    period = ["sliding_attention", "mlp"] * 3 + ["full_attention", "mlp"]
    out = shrink(planted(num_hidden_layers=32, layer_types=period * 4))
    assert out["layer_types"] == period and out["num_hidden_layers"] == 8


def test_leading_dense_layers_leave_a_sparse_one():
    out = shrink(planted(first_k_dense_replace=3, n_routed_experts=256, num_experts_per_tok=8))
    assert out["num_hidden_layers"] == 4 and out["first_k_dense_replace"] == 3
    assert (out["n_routed_experts"], out["num_experts_per_tok"]) == (4, 2)


def test_top_one_routing_stays_top_one():
    assert shrink(planted(num_experts=16, num_experts_per_tok=1))["num_experts_per_tok"] == 1


def test_strings_as_long_as_the_layer_count_are_not_cut():
    """A switch spelled as a string is not a per-layer list, whatever its length (big_bird, whisper)."""
    out = shrink(planted(num_hidden_layers=12, attention_type="block_sparse", hidden_act="gelu"))
    out4 = shrink(planted(num_hidden_layers=4, activation_function="gelu"))
    assert out["attention_type"] == "block_sparse" and out["hidden_act"] == "gelu"
    assert out4["activation_function"] == "gelu"


def test_per_layer_config_keeps_the_layers_kept_and_their_differences():
    base = planted(
        layer_types=["full_attention", "sliding_attention"] * 16,
        head_dim=256,
        per_layer_config={"01": {"head_dim": 512}, "03": {"head_dim": 512}, "31": {"head_dim": 512}},
    )
    out = shrink(base)
    plc = out["per_layer_config"]
    assert set(plc) == {"01"}  # layer 3 and 31 are beyond the 3 layers kept
    assert out["head_dim"] == HEAD_DIM and plc["01"]["head_dim"] != out["head_dim"]


def test_an_mla_layer_keeps_its_head_width_the_sum_of_its_parts():
    """Dots 3: a sliding layer whose head_dim = no-rope + rope widths, its no-rope width its own."""
    base = planted(
        layer_types=["full_attention", "sliding_attention", "sliding_attention"] * 10 + ["full_attention"] * 2,
        head_dim=256,
        qk_nope_head_dim=128,
        qk_rope_head_dim=64,
        per_layer_config={"01": {"qk_nope_head_dim": 192, "num_attention_heads": 64}},
    )
    out = shrink(base)
    layer = {**out, **out["per_layer_config"]["01"]}
    assert layer["head_dim"] == layer["qk_nope_head_dim"] + layer["qk_rope_head_dim"]
    assert layer["qk_nope_head_dim"] != out["qk_nope_head_dim"]
    assert layer["num_attention_heads"] != out["num_attention_heads"]


def test_a_head_width_tied_to_the_rope_width_stays_tied():
    """LongCat-Flash: head_dim is the rope width the rotary module builds."""
    out = shrink(planted(head_dim=64, qk_rope_head_dim=64, qk_nope_head_dim=128))
    assert out["head_dim"] == out["qk_rope_head_dim"]


def test_special_token_ids_lie_inside_the_vocabulary():
    out = shrink(
        planted(
            pad_token_id=151_643,
            bos_token_id=151_644,
            eos_token_id=[151_645, 151_646],
            image_token_id=151_655,
            image_token_index=151_656,
            begin_suppress_tokens=[220, 50_256],
        )
    )
    ids = [out["pad_token_id"], out["bos_token_id"], *out["eos_token_id"], out["image_token_id"]]
    ids += [out["image_token_index"], *out["begin_suppress_tokens"]]
    assert all(0 <= i < VOCAB for i in ids) and 220 in out["begin_suppress_tokens"]
    assert len(set(ids)) == len(ids)  # distinct ids stay distinct


def test_every_vocabulary_is_tiny():
    out = shrink(planted(vocab_size_per_layer_input=262_144, hidden_size_per_layer_input=256))
    assert out["vocab_size_per_layer_input"] == VOCAB and out["hidden_size_per_layer_input"] <= WIDTH


@pytest.mark.parametrize(
    "key, extra",
    [
        ("q_lora_rank", {}),  # no query compression
        ("sliding_window", {}),  # no window
        ("index_topk", {}),  # no sparse attention
        ("num_experts_per_tok", {}),  # no experts at all
    ],
)
def test_an_unset_option_stays_unset(key, extra):
    assert shrink(planted(**{key: None}, **extra))[key] is None


def test_an_unset_size_the_model_needs_is_set():
    """head_dim None (the width over the heads), KV heads None (as many as query heads), experts per
    token None beside a count of experts (deepseek_v2's default): transformers cannot build them."""
    out = shrink(planted(head_dim=None, num_key_value_heads=None, n_routed_experts=64, num_experts_per_tok=None))
    assert out["head_dim"] == WIDTH // HEADS and out["num_key_value_heads"] == HEADS
    assert out["num_experts_per_tok"] == 2


def test_windows_and_sparse_top_k_are_crossed_by_a_13_token_prompt():
    out = shrink(
        planted(sliding_window=4096, index_topk=2048, attention_chunk_size=8192, index_block_size=128, window_size=512)
    )
    for key in ("sliding_window", "index_topk", "attention_chunk_size", "window_size"):
        assert out[key] < 13, key
    assert 2 < 13 // out["index_block_size"]


def test_a_state_space_mixer_keeps_heads_times_width_equal_to_expand_times_width():
    out = shrink(planted(mamba_n_heads=128, mamba_d_head=64, mamba_expand=2, mamba_n_groups=8, mamba_d_ssm=8192))
    assert out["mamba_n_heads"] * out["mamba_d_head"] == out["mamba_expand"] * WIDTH == out["mamba_d_ssm"]
    assert out["mamba_n_heads"] % out["mamba_n_groups"] == 0


def test_trailing_kv_shared_layers_follow_a_prefix_holding_every_kind():
    """Gemma 3n: the last layers reuse the KV of the last earlier layer of their kind."""
    kinds = ["sliding_attention"] * 4 + ["full_attention"]
    out = shrink(planted(num_hidden_layers=35, layer_types=kinds * 7, num_kv_shared_layers=15))
    n, shared = out["num_hidden_layers"], out["num_kv_shared_layers"]
    assert 0 < shared < n and set(out["layer_types"][: n - shared]) == set(kinds)
    # a count of every layer stays every layer (an assistant reads the target model's KV everywhere)
    everything = shrink(planted(num_hidden_layers=30, num_kv_shared_layers=30))
    assert everything["num_kv_shared_layers"] == everything["num_hidden_layers"]


def test_a_size_tied_to_the_width_stays_tied():
    out = shrink(planted(adapter_input_size=4096, max_position_embeddings=4096))
    assert out["adapter_input_size"] == WIDTH and out["max_position_embeddings"] == 4096


def test_sliding_layers_keep_their_own_head_counts():
    """Inkling: sliding-window layers with their own head counts (swa_*), still differing from the others."""
    out = shrink(planted(swa_num_attention_heads=64, swa_num_key_value_heads=16, num_key_value_heads=8))
    assert out["swa_num_attention_heads"] == 2 * HEADS and out["swa_num_key_value_heads"] == 2 * 2
    assert out["swa_num_attention_heads"] % out["swa_num_key_value_heads"] == 0


def test_sub_configs_are_shrunk_too():
    out = shrink({"text_config": {**planted(), "model_type": "x_text"}, "vision_config": {"hidden_size": 1152}})
    assert out["text_config"]["hidden_size"] == WIDTH and out["vision_config"]["hidden_size"] == WIDTH


def test_layers_listed_by_index_keep_one_in_the_twin():
    """Mllama's cross-attention layers (3, 8, ...): the twin keeps layer 3, so it has one."""
    out = shrink(planted(num_hidden_layers=40, cross_attention_layers=[3, 8, 13, 18, 23, 28, 33, 38]))
    assert out["num_hidden_layers"] == 4 and out["cross_attention_layers"] == [3]
    assert shrink(planted(mlp_only_layers=[0, 1]))["mlp_only_layers"] == [0, 1]
