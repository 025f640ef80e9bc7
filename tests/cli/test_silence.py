"""No long silent step (issue 39 case 6): where stderr is not a terminal (a pipe, a log), each step that can
take more than a few seconds says what it does in a line on stderr *as it starts*, before its work.

Was: a piped ``geoprobe sula`` printed nothing while SmolLM2 loaded (1.5-2 minutes on a loaded machine, the
model's interface checks included), and ``geoprobe trajectory`` nothing before ``preparing data: 1/1 (100 %),
0:00:54 elapsed`` (reading the six corpora, training the BPE on 24 M characters and tokenising them). Each
slow function is wrapped here to record what stderr held when it was called: its line must be there already,
and be the last line so far (``GEOPROBE_STATUS_AFTER=0``: the line as the step starts; by default it comes
once the step has run 2 s, so that a quick step prints nothing)."""

from __future__ import annotations

import pytest

from tests.cli.test_cli import run_cli


class Recorder:
    """Wraps functions so that each call records (name, the last stderr line printed so far); the stderr
    read before the call is kept, so the whole of stderr is ``text`` at the end."""

    def __init__(self, capsys) -> None:
        self.capsys, self.text, self.calls = capsys, "", []

    def wrap(self, monkeypatch, owner, name: str) -> None:
        real = getattr(owner, name)

        def recorded(*args, **kwargs):
            self.text += self.capsys.readouterr().err
            lines = [ln for ln in self.text.splitlines() if ln.strip()]
            self.calls.append((name, lines[-1] if lines else None))
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, recorded)

    def last_line_at(self, name: str) -> str | None:
        found = [line for n, line in self.calls if n == name]
        assert found, f"{name} was never called: {self.calls}"
        return found[0]


def test_trajectory_says_each_data_step_before_it_starts(tmp_path, capsys, monkeypatch):
    import geoprobe.trajectory.data as data
    import geoprobe.trajectory.train as train

    monkeypatch.setenv("GEOPROBE_STATUS_AFTER", "0")
    rec = Recorder(capsys)
    for owner, name in (
        (data, "read_corpora"),
        (data, "train_tokenizer"),
        (data, "encode"),
        (train, "build_model"),
        (train.store, "save_checkpoint"),
    ):
        rec.wrap(monkeypatch, owner, name)
    args = ["trajectory", "--steps", "2", "--layers", "1", "--hidden-size", "32", "--heads", "2", "--domains", "math"]
    args += ["--vocab-size", "300", "--seq-len", "16", "--batch-size", "2", "--threads", "1", "--out", "t"]
    code, _, err = run_cli(args, capsys, monkeypatch, cwd=tmp_path)
    assert code == 0, rec.text + err
    assert rec.last_line_at("read_corpora") == "reading the corpora (math) …"
    tokenizer = rec.last_line_at("train_tokenizer")
    assert tokenizer.startswith("training the BPE tokenizer (300 tokens) on ") and " characters of " in tokenizer
    assert rec.last_line_at("encode").startswith("tokenising ") and rec.last_line_at("encode").endswith(" …")
    assert rec.last_line_at("build_model") == "building the model (1 layer, d_model 32) …"
    assert rec.last_line_at("save_checkpoint") == "scoring and saving the initialisation (checkpoint step 0) …"


def test_a_resumed_trajectory_says_it_loads_its_weights_inside_that_step_and_trains_no_tokenizer(monkeypatch, tmp_path):
    """Through the Python API with a Reporter that records each status and the calls made inside it."""
    from contextlib import contextmanager

    import geoprobe.trajectory.data as data
    import geoprobe.trajectory.train as train
    from geoprobe.experiment import Reporter
    from tests.trajectory.conftest import planted_documents, tiny

    def stop_at_3(stage, done, total):
        if stage == "training" and done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train.train_trajectory(
            tiny(steps=5), out=tmp_path, documents=planted_documents(), threads=1, progress=stop_at_3
        )
    events: list[tuple[str, str]] = []

    class Told(Reporter):
        @contextmanager
        def status(self, text):
            events.append(("begins", text))
            yield
            events.append(("ends", text))

    for owner, name in ((train.store, "load_weights"), (data, "train_tokenizer"), (data, "encode")):
        real = getattr(owner, name)
        monkeypatch.setattr(
            owner, name, lambda *a, _r=real, _n=name, **k: (events.append(("call", _n)), _r(*a, **k))[1]
        )
    resumed = train.train_trajectory(
        tiny(steps=5), out=tmp_path, documents=planted_documents(), threads=1, progress=Told()
    )
    assert resumed.resumed_from == 2
    loading = "loading the weights of step 2 to resume …"
    assert events[:3] == [("begins", loading), ("call", "load_weights"), ("ends", loading)], events
    assert ("call", "train_tokenizer") not in events  # a resumed run reads its tokenizer back
    tokenising = [e for e in events if e[0] == "begins" and e[1].startswith("tokenising ")]
    assert len(tokenising) == 1 and events.index(tokenising[0]) < events.index(("call", "encode")), events


def test_sula_says_it_loads_the_model_and_analyses_before_doing_so(tmp_path, capsys, monkeypatch):
    import geoprobe.sula.run as sula_run
    from geoprobe.models.loading import LoadOptions

    monkeypatch.setenv("GEOPROBE_STATUS_AFTER", "0")
    rec = Recorder(capsys)
    rec.wrap(monkeypatch, LoadOptions, "load")
    rec.wrap(monkeypatch, sula_run, "fit_basis")  # the analysis's first step
    args = ["sula", "--model", "twin:llama-3.2-1b", "--k", "0,1", "--n-per-k", "2", "--n-resamples", "20"]
    code, _, err = run_cli([*args, "--out", "s"], capsys, monkeypatch, cwd=tmp_path)
    assert code == 0, rec.text + err
    assert rec.last_line_at("load") == "loading twin:llama-3.2-1b …"
    assert rec.last_line_at("fit_basis") == "analysing 4 conditions (16 prompts, 20 bootstrap resamples) …"


def test_sula_reports_the_capture_of_values_batch_by_batch():
    """Was: one report per condition once its values were captured, so a long capture showed the previous
    stage's label; now each batch of the capture is reported."""
    from geoprobe.models import twin
    from geoprobe.sula import SulaConfig
    from geoprobe.sula.run import run_sula

    seen: list[tuple[str, int, int]] = []
    cfg = SulaConfig(k_values=(0, 1), n_per_k=4, n_resamples=20, min_label_mass=0.0, batch_size=2)
    run_sula(twin("llama-3.2-1b"), cfg, conditions=("main",), progress=lambda *a: seen.append(a))
    values = [(done, total) for stage, done, total in seen if stage == "main: values"]
    assert values == [(2, 8), (4, 8), (6, 8), (8, 8)], seen


@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "terminal"])
def test_a_status_is_one_line_at_its_start_off_a_terminal_and_a_transient_spinner_on_one(terminal, monkeypatch):
    text = "training the BPE tokenizer on 24.3 M characters …"
    buf = _console(monkeypatch, terminal)
    monkeypatch.setenv("GEOPROBE_STATUS_AFTER", "0")
    from geoprobe.cli.progress import status

    with status(text):
        during = buf.getvalue()
    if terminal:  # rich's spinner draws the text, and erases it at the end: no line is left
        assert f"\x1b[0m {text}" in buf.getvalue()  # after the spinner's frame
        assert buf.getvalue().endswith("\x1b[1A\x1b[2K") and not buf.getvalue().startswith(text)
    else:
        assert during == f"{text}\n"  # before the step's work
        assert buf.getvalue() == during  # said once


def test_by_default_a_status_line_comes_once_the_step_has_run_its_seconds_and_never_for_a_quick_step(monkeypatch):
    import time

    from geoprobe.cli.progress import STATUS_DEFAULT, status, status_seconds

    buf = _console(monkeypatch, terminal=False)
    monkeypatch.delenv("GEOPROBE_STATUS_AFTER", raising=False)
    assert status_seconds() == STATUS_DEFAULT == 2.0
    monkeypatch.setenv("GEOPROBE_STATUS_AFTER", "0.2")
    with status("a quick step …"):
        pass
    with status("a long step …"):
        at_start = buf.getvalue()
        deadline = time.monotonic() + 30
        while not buf.getvalue() and time.monotonic() < deadline:  # the line, while the step still runs
            time.sleep(0.05)
        during = buf.getvalue()
    time.sleep(0.4)
    assert at_start == "" and during == "a long step …\n" and buf.getvalue() == during


def _console(monkeypatch, terminal: bool):
    import io

    from rich.console import Console

    import geoprobe.cli.progress as progress

    buf = io.StringIO()
    monkeypatch.setattr(progress, "err", Console(file=buf, force_terminal=terminal, width=100))
    return buf
