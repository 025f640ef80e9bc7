"""Why geoprobe refuses an architecture: the documented list (docs/models.md, "Refusals").

Every refusal of an architecture (``UnsupportedArchitectureError``) carries one of these keys
as its ``reason``; the census (tests/models/census.py) fails on a refusal without one. The
first three say the model is not a decoder-only softmax-attention model, which geoprobe
measures; the others are decoder-only softmax-attention models geoprobe cannot yet read and
are counted against it.
"""

from __future__ import annotations

#: reason key -> what it means (one line each)
REASONS: dict[str, str] = {
    "no-attention": "no softmax attention layers (state-space, recurrent or linear-attention model)",
    "encoder-decoder": "the decoder of an encoder-decoder model: its layers also attend to an encoder's output",
    "bidirectional": "attention that is not causal: a position sees the tokens after it (an encoder, CPM-Ant)",
    "inline": "attention computed inline, outside transformers' AttentionInterface, and not one geoprobe reads",
    "interface-calls": "attention modules that do not call the attention function once per layer",
    "other-computation": "under geoprobe's attention function the model computes something other than its own",
    "heads": "query heads that do not divide into key/value heads",
    "forward-fails": "the model's own forward pass on token ids alone fails (it needs other inputs)",
    "no-layer-index": "attention modules that do not say which layer they are, or several that say the same layer",
    "differential": "differential attention: a layer combines two softmax maps per head, where geoprobe measures one",
    "looped": "one attention module runs at several depths of a forward pass (looped or shared layers)",
}

#: reasons that say the model is not a decoder-only softmax-attention model (not counted in the census)
NOT_DECODER_ONLY = frozenset({"no-attention", "encoder-decoder", "bidirectional"})


def counted(reason: str) -> bool:
    """Whether a model refused for ``reason`` is a decoder-only softmax-attention model."""
    return reason not in NOT_DECODER_ONLY
