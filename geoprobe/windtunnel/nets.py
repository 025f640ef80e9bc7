"""The two learners of the wind tunnels: a standard Hugging Face decoder and a capacity-matched MLP.

The transformer is a ``LlamaForCausalLM`` (pre-norm RMSNorm, SwiGLU, rotary positions, tied
embeddings), so a trained checkpoint is an ordinary Hugging Face model directory that
``geoprobe.models.load_model`` boots through TransformerBridge like any LLM. (The authors' code
uses learned absolute positions; no supported family here has them with RMSNorm, and rotary
positions are what lets the HMM model run past its training length.)

The MLP sees exactly what the transformer sees at a prediction: the tokens up to and including
the query position (later positions are replaced by ``<pad>``), each embedded with a learned
position embedding, flattened, then ``depth`` pre-LayerNorm residual blocks of width ``width``.
Its width is solved so that its parameter count is within 1 % of the transformer's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Sequence

import torch
from jaxtyping import Float, Int
from torch import nn

Arch = Literal["transformer", "mlp"]


@dataclass(frozen=True)
class TransformerSize:
    n_layers: int
    n_heads: int
    d_model: int
    d_ff: int

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by {self.n_heads} heads")


def llama_config(size: TransformerSize, vocab: Sequence[str], max_len: int) -> Any:
    from transformers import LlamaConfig

    cfg = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=size.d_model,
        intermediate_size=size.d_ff,
        num_hidden_layers=size.n_layers,
        num_attention_heads=size.n_heads,
        num_key_value_heads=size.n_heads,
        max_position_embeddings=max_len,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=None,
        attention_bias=False,
        mlp_bias=False,
        rope_theta=10000.0,
        initializer_range=0.02,
    )
    cfg.architectures = ["LlamaForCausalLM"]
    return cfg


def build_transformer(size: TransformerSize, vocab: Sequence[str], max_len: int, seed: int) -> Any:
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = llama_config(size, vocab, max_len)
    cfg._attn_implementation = "sdpa"
    return LlamaForCausalLM(cfg)


def n_params(model: nn.Module) -> int:
    """Distinct parameters (tied weights counted once)."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


@dataclass(frozen=True)
class MLPConfig:
    vocab_size: int
    seq_len: int
    d_embed: int
    width: int
    depth: int

    def n_params(self) -> int:
        v, t, e, w, d = self.vocab_size, self.seq_len, self.d_embed, self.width, self.depth
        return v * e + t * e + (t * e * w + w) + d * (w * w + w + 2 * w) + 2 * w + (w * v + v)


class ResidualMLP(nn.Module):
    """Flattened causal prefix → residual MLP → next-token logits over the whole vocabulary."""

    def __init__(self, cfg: MLPConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_embed)
        self.pos = nn.Parameter(torch.zeros(cfg.seq_len, cfg.d_embed))
        self.inp = nn.Linear(cfg.seq_len * cfg.d_embed, cfg.width)
        self.norms = nn.ModuleList(nn.LayerNorm(cfg.width) for _ in range(cfg.depth))
        self.blocks = nn.ModuleList(nn.Linear(cfg.width, cfg.width) for _ in range(cfg.depth))
        self.norm_f = nn.LayerNorm(cfg.width)
        self.head = nn.Linear(cfg.width, cfg.vocab_size)
        nn.init.normal_(self.pos, std=0.02)
        for block in self.blocks:
            nn.init.normal_(block.weight, std=0.02 / math.sqrt(2 * cfg.depth))
            nn.init.zeros_(block.bias)

    def forward(
        self, ids: Int[torch.Tensor, "B T"], positions: Int[torch.Tensor, " K"]
    ) -> Float[torch.Tensor, "B K vocab"]:
        """Logits at every position in ``positions``: row b, prediction k sees ids[b, :positions[k]+1]."""
        B, T = ids.shape
        if T > self.cfg.seq_len:
            raise ValueError(f"sequence of {T} tokens is longer than this MLP's input ({self.cfg.seq_len})")
        if T < self.cfg.seq_len:  # positions past the sequence read as <pad>, as unseen ones do
            ids = torch.nn.functional.pad(ids, (0, self.cfg.seq_len - T))
            T = self.cfg.seq_len
        K = positions.shape[0]
        visible = torch.arange(T, device=ids.device)[None, :] <= positions[:, None]  # (K, T)
        prefix = torch.where(visible[None], ids[:, None, :], torch.zeros_like(ids[:, None, :]))  # (B, K, T)
        x = (self.embed(prefix) + self.pos).reshape(B * K, T * self.cfg.d_embed)
        h = self.inp(x)
        for norm, block in zip(self.norms, self.blocks):
            h = h + block(torch.nn.functional.gelu(norm(h)))
        return self.head(self.norm_f(h)).reshape(B, K, -1)


def matched_mlp_config(
    target_params: int, vocab_size: int, seq_len: int, depth: int = 18, d_embed: int = 16
) -> MLPConfig:
    """The MLP of ``depth`` blocks whose parameter count is within 1 % of ``target_params``:
    the width is solved for, trying token embedding sizes near ``d_embed`` until one fits."""
    v, t, d = vocab_size, seq_len, depth
    best = None
    for e in sorted(range(4, 4 * d_embed + 1), key=lambda x: (abs(x - d_embed), x)):
        # params(w) = d w² + w (t e + 1 + 3 d + 2 + v) + (v e + t e + v)
        a, b, c = d, t * e + 1 + 3 * d + 2 + v, v * e + t * e + v - target_params
        if b * b - 4 * a * c < 0:
            continue
        w = max(1, round((-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)))
        for ww in (w - 1, w, w + 1):
            if ww >= 1:
                m = MLPConfig(v, t, e, ww, d)
                if best is None or abs(m.n_params() - target_params) < abs(best.n_params() - target_params):
                    best = m
        if best is not None and abs(best.n_params() - target_params) <= 0.01 * target_params:
            return best
    raise ValueError(
        f"no MLP of depth {depth} matches {target_params} parameters within 1 % "
        f"(closest {best.n_params() if best else 'none'}); lower the depth"
    )


def build_mlp(cfg: MLPConfig, seed: int) -> ResidualMLP:
    torch.manual_seed(seed)
    return ResidualMLP(cfg)


def word_tokenizer(vocab: Sequence[str], bos: bool = True) -> Any:
    """A whitespace word-level fast tokenizer over ``vocab`` that prepends ``<bos>`` (when ``bos``; the
    authors' convention has no BOS)."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="<pad>"))
    tok.pre_tokenizer = WhitespaceSplit()
    if bos:
        tok.post_processor = TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 1)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<bos>", pad_token="<pad>", unk_token="<pad>", padding_side="right"
    )


def to_text(ids: Sequence[int], vocab: Sequence[str]) -> str:
    """Token ids as the text the word tokenizer reads back (``<bos>``, id 1, dropped: the tokenizer adds it)."""
    return " ".join(vocab[int(i)] for i in ids if int(i) != 1)
