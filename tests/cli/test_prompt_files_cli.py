"""A recipe's ``[prompts] file`` and ``--prompts FILE`` are one path (issue 27 part 3): the file is
resolved relative to the recipe (a file of the same name in the working directory is not read), read
by the same reader (geoprobe.prompts.read_prompt_text: regular file, 16 MiB, UTF-8), and the
terminal says which file and how many prompts were read from it, since every line of it is kept in
the capture (a recipe naming /etc/passwd used to copy it there silently, exit 0)."""

from __future__ import annotations

import json

from tests.cli.test_cli import run_cli

FAST = "[analyses]\nn_resamples = 20\npca_resamples = 10\nnull_draws = 10\nn_permutations = 20\n"
TWIN = "twin:llama-3.2-1b"


def test_recipe_and_flag_read_the_same_file_the_same_way_and_say_so(tmp_path, capsys, monkeypatch):
    recipes, work = tmp_path / "recipes", tmp_path / "work"
    recipes.mkdir()
    work.mkdir()
    ours = [f"Recipe prompt {i} says that the weather" for i in range(12)]
    (recipes / "p.txt").write_bytes("\r".join(ours).encode("utf-8"))  # CR-only: 12 prompts, not 1
    (work / "p.txt").write_text("".join(f"Decoy prompt {i} in the working directory\n" for i in range(12)))
    (recipes / "r.toml").write_text('[probe]\ncommand = "scan"\n[prompts]\nfile = "p.txt"\n' + FAST)

    code, out, err = run_cli(
        ["run", "../recipes/r.toml", "--model", TWIN, "--out", "by_recipe"], capsys, monkeypatch, work
    )
    assert code == 0, err
    said = f"prompts: 12 read from {str((recipes / 'p.txt').resolve())!r}"
    assert said in " ".join(out.split())
    kept = json.loads((work / "by_recipe" / "capture" / "capture.json").read_text(encoding="utf-8"))["prompts"]
    assert kept == ours  # the recipe's file, not the working directory's p.txt

    code, out, err = run_cli(
        ["run", "../recipes/r.toml", "--model", TWIN, "--prompts", "../recipes/p.txt", "--out", "by_flag"],
        capsys,
        monkeypatch,
        work,
    )
    assert code == 0, err
    assert said in " ".join(out.split())  # the same file, the same words
    a = json.loads((work / "by_recipe" / "results.json").read_text(encoding="utf-8"))
    b = json.loads((work / "by_flag" / "results.json").read_text(encoding="utf-8"))
    assert a["provenance"]["prompts_hash"] == b["provenance"]["prompts_hash"]


def test_any_text_file_given_as_prompts_is_named_with_its_line_count(tmp_path, capsys, monkeypatch):
    """A file that is not meant as prompts (here an /etc/passwd look-alike) is still one prompt a line,
    but never silently: the line before the model loads names it and the count."""
    passwd = tmp_path / "passwd"
    passwd.write_text("".join(f"user{i}:x:{1000 + i}:{1000 + i}::/home/user{i}:/bin/sh\n" for i in range(14)))
    args = ["capture", "--model", TWIN, "--prompts", str(passwd), "--layers", "0", "--out", "out"]
    code, out, err = run_cli(args, capsys, monkeypatch, tmp_path)
    assert code == 0, err
    assert f"prompts: 14 read from {str(passwd)!r}" in " ".join(out.split())
    assert out.index("prompts: 14 read from") < out.index("wrote out")
