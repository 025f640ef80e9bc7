"""Prompt files: which lines are prompts, and files that are refused before they are read (issue 17)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from geoprobe.errors import PromptError
from geoprobe.prompts import MAX_PROMPT_FILE_BYTES, read_prompts
from geoprobe.text import is_blank, split_lines

# every character str.splitlines() treats as a line break besides the line ends \n, \r\n and \r
ODD_BREAKS = ("\u2028", "\u2029", "\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85")
PROMPTS_12 = [f"Prompt number {i} says that the weather" for i in range(12)]


def test_text_lines_end_only_at_line_ends(tmp_path):
    """12 lines, each with one of the odd breaks inside, are 12 prompts (splitlines made 36 of them)."""
    lines = [
        f"Prompt {i} says{ODD_BREAKS[i % len(ODD_BREAKS)]}that the weather{ODD_BREAKS[(i + 3) % len(ODD_BREAKS)]}is"
        for i in range(12)
    ]
    p = tmp_path / "odd.txt"
    p.write_text("\r\n".join(lines[:6]) + "\n" + "\n".join(lines[6:]) + "\n", encoding="utf-8")
    assert len(p.read_text(encoding="utf-8").splitlines()) > 12  # what the old reader split on
    assert read_prompts(p) == lines


def test_jsonl_lines_end_only_at_newline(tmp_path):
    items = [f"a{b}b" for b in ODD_BREAKS]
    p = tmp_path / "odd.jsonl"
    # ensure_ascii=False keeps U+2028 etc. raw inside the JSON strings, as many writers do
    p.write_text("\r\n".join(json.dumps({"prompt": x}, ensure_ascii=False) for x in items) + "\r\n", encoding="utf-8")
    assert read_prompts(p) == items


@pytest.mark.parametrize("suffix", [".txt", ".jsonl"])
def test_whitespace_and_zero_width_lines_are_blank(tmp_path, suffix):
    blanks = ["", "   ", "\t", "\u200b", "\u200c\u200d", " \u2060 ", "\ufeff", "\u00a0\u200b", "\u3000"]
    real = ["first prompt", "second\u200bprompt"]
    body = [real[0], *blanks, real[1] if suffix == ".txt" else json.dumps(real[1])]
    if suffix == ".jsonl":
        body[0] = json.dumps(real[0])
    p = tmp_path / f"p{suffix}"
    p.write_text("\n".join(body) + "\n", encoding="utf-8")
    assert read_prompts(p) == real


def test_a_json_list_entry_of_only_zero_width_characters_is_empty(tmp_path):
    p = tmp_path / "p.json"
    p.write_text(json.dumps(["fine", "\u200b\u2060"]), encoding="utf-8")
    with pytest.raises(PromptError, match=r"prompt #1 in .* is empty"):
        read_prompts(p)


def test_a_file_of_only_zero_width_lines_holds_no_prompts(tmp_path):
    p = tmp_path / "zw.txt"
    p.write_text("\u200b\n\ufeff\u200d\n\n", encoding="utf-8")
    with pytest.raises(PromptError, match="holds no prompts"):
        read_prompts(p)


def test_is_blank_and_split_lines():
    assert is_blank("") and is_blank(" \u200b\t\ufeff") and not is_blank("\u200bx")
    assert split_lines("a\r\nb\u2028c\nd\re\x85f\r") == ["a", "b\u2028c", "d", "e\x85f", ""]


@pytest.mark.parametrize(
    "end",
    ["\n", "\r\n", "\r", "mixed"],
    ids=["LF", "CRLF", "CR (old Mac)", "LF, CRLF and CR mixed"],
)
@pytest.mark.parametrize("suffix", [".txt", ".jsonl"])
def test_every_line_end_gives_the_same_12_prompts(tmp_path, end, suffix):
    """A file saved with old Mac line ends (CR only) was one prompt of 12 lines; every line-end
    convention, and any mix of them, now gives the same 12 prompts in .txt and .jsonl files."""
    lines = PROMPTS_12 if suffix == ".txt" else [json.dumps(x) for x in PROMPTS_12]
    ends = [("\n", "\r\n", "\r")[i % 3] if end == "mixed" else end for i in range(len(lines))]
    p = tmp_path / f"p{suffix}"
    p.write_bytes("".join(line + e for line, e in zip(lines, ends)).encode("utf-8"))
    assert read_prompts(p) == PROMPTS_12


def test_a_cr_only_file_without_a_final_line_end_is_12_prompts(tmp_path):
    p = tmp_path / "mac.txt"
    p.write_bytes("\r".join(PROMPTS_12).encode("utf-8"))  # "a\rb\rc…": no \n anywhere
    assert read_prompts(p) == PROMPTS_12


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\x85"], ids=["U+2028", "U+2029", "U+0085"])
def test_unicode_line_separators_stay_inside_the_prompt_in_every_format(tmp_path, sep):
    """U+2028, U+2029 and NEL are no line ends (editors do not break there): the same one prompt
    from a .txt line, a .jsonl line and a .json list, each file ending in CR."""
    prompt = f"first half{sep}second half"
    (tmp_path / "p.txt").write_text(prompt + "\r", encoding="utf-8")
    (tmp_path / "p.jsonl").write_text(json.dumps(prompt, ensure_ascii=False) + "\r", encoding="utf-8")
    (tmp_path / "p.json").write_text(json.dumps([prompt], ensure_ascii=False) + "\r", encoding="utf-8")
    for name in ("p.txt", "p.jsonl", "p.json"):
        assert read_prompts(tmp_path / name) == [prompt], name


def test_a_sparse_50_mb_file_is_refused_before_it_is_read(tmp_path):
    p = tmp_path / "big.txt"
    with open(p, "wb") as f:
        f.write(b"\xff")  # not UTF-8: reading and decoding first would report that instead
        f.truncate(50 * 2**20)  # sparse: instant, no disk used
    with pytest.raises(PromptError) as e:
        read_prompts(p)
    msg = str(e.value)
    assert f"prompt file {str(p)!r} is 50.0 MiB, above the 16 MiB limit for a prompt file; split it" in msg
    assert "\n" not in msg
    assert MAX_PROMPT_FILE_BYTES == 16 * 2**20


def test_a_file_at_the_limit_is_read(tmp_path):
    p = tmp_path / "edge.txt"
    line = b"x" * 1023 + b"\n"
    p.write_bytes(line * (MAX_PROMPT_FILE_BYTES // len(line)))
    assert os.path.getsize(p) == MAX_PROMPT_FILE_BYTES
    assert len(read_prompts(p)) == MAX_PROMPT_FILE_BYTES // len(line)


def _read_in_subprocess(path: str, timeout: float = 20) -> subprocess.CompletedProcess:
    code = (
        "import sys\nfrom geoprobe.prompts import read_prompts\nfrom geoprobe.errors import PromptError\n"
        "try:\n    read_prompts(sys.argv[1])\nexcept PromptError as e:\n    print(e)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, path],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "prompts.txt"
    os.mkfifo(fifo)
    t = time.perf_counter()
    r = _read_in_subprocess(str(fifo))  # before the fix this blocked until the timeout
    assert time.perf_counter() - t < 20
    assert f"prompt file {str(fifo)!r} is a FIFO (named pipe), not a regular file" in r.stdout, r.stderr


def test_dev_zero_is_refused_without_reading(tmp_path):
    r = _read_in_subprocess("/dev/zero")
    assert "prompt file '/dev/zero' is a character device, not a regular file" in r.stdout, r.stderr


def test_a_socket_is_refused(tmp_path):
    path = tmp_path / "s.txt"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind(str(path))
        with pytest.raises(PromptError, match="is a socket, not a regular file"):
            read_prompts(path)
    finally:
        s.close()
