"""The trajectory's data: document split, BPE tokenizer, token stream and per-step batches."""

from __future__ import annotations

import numpy as np

from geoprobe.trajectory.config import EOS_TOKEN, PAD_TOKEN
from geoprobe.trajectory.data import (
    encode,
    eval_batch,
    hf_tokenizer,
    prepare,
    split_documents,
    step_batch,
    text_hash,
    train_tokenizer,
)
from tests.trajectory.conftest import planted_documents, tiny


def test_every_nth_document_is_held_out_and_never_trained_on():
    docs = {"a": [f"a{i}" for i in range(12)], "b": [f"b{i}" for i in range(3)]}
    train, held = split_documents(docs, 5)
    assert held == {"a": ["a4", "a9"], "b": []}
    assert train["a"] == [d for d in docs["a"] if d not in held["a"]] and train["b"] == docs["b"]


def test_bpe_is_deterministic_with_pythia_s_special_tokens():
    docs = planted_documents()
    a, b = train_tokenizer(docs, 300), train_tokenizer(docs, 300)
    assert a == b
    tok = hf_tokenizer(a)
    assert tok.convert_tokens_to_ids([EOS_TOKEN, PAD_TOKEN]) == [0, 1]
    assert tok.eos_token_id == tok.bos_token_id == 0 and tok.pad_token_id == 1
    assert tok("w01 w10", add_special_tokens=True)["input_ids"][0] != 0  # no BOS prepended, as Pythia's
    text = "Any text at all, even ünïcödé and\ttabs, survives: byte-level."
    assert tok.decode(tok(text)["input_ids"]) == text


def test_stream_is_documents_each_followed_by_endoftext():
    tok = hf_tokenizer(train_tokenizer(planted_documents(), 300))
    docs = ["w01 w10", "w03"]
    ids = encode(tok, docs)
    first = tok(docs[0])["input_ids"]
    assert list(ids) == first + [0] + tok(docs[1])["input_ids"] + [0]


def test_batches_are_a_function_of_seed_and_step_only():
    data = prepare(tiny(), planted_documents())
    c = tiny()
    a, b = step_batch(c, data.train, 7), step_batch(c, data.train, 7)
    assert np.array_equal(a, b) and a.shape == (c.batch_size, c.seq_len + 1)
    assert not np.array_equal(a, step_batch(c, data.train, 8))
    assert not np.array_equal(a, step_batch(tiny(seed=1), data.train, 7))
    for row in a:  # each row is a contiguous window of the stream
        starts = [
            i for i in range(data.train.size - c.seq_len) if np.array_equal(data.train[i : i + c.seq_len + 1], row)
        ]
        assert starts


def test_heldout_windows_are_evenly_spaced_and_from_held_out_documents():
    c = tiny()
    data = prepare(c, planted_documents())
    w = eval_batch(c, data.heldout)
    assert w.shape == (c.eval_windows, c.seq_len + 1)
    assert data.record.heldout_documents == {"documents": 8} and data.record.documents == {"documents": 32}
    assert data.record.text_sha256 == text_hash([d for i, d in enumerate(planted_documents()) if (i + 1) % 5])
    assert eval_batch(c, data.heldout[: c.seq_len]) is None  # shorter than one window


def test_record_identifies_the_data():
    a, b = prepare(tiny(), planted_documents()), prepare(tiny(), planted_documents(seed=1))
    assert a.record.tokenizer_sha256 != b.record.tokenizer_sha256 or a.record.tokens_sha256 != b.record.tokens_sha256
    again = prepare(tiny(), planted_documents(), tokenizer_json=a.tokenizer_json)
    assert again.record.to_dict() == a.record.to_dict()
