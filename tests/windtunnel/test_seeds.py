"""Several seeds of a wind tunnel (arXiv 2512.22471, Figure 11): --seeds parsing, the spread against a hand
computation, the TunnelSeeds result (round trip, page, registry), and the recipe key."""

from __future__ import annotations

import math

import pytest

from geoprobe.analysis.stats import Estimate
from geoprobe.errors import GeoprobeError
from geoprobe.windtunnel.evaluate import TunnelMetrics
from geoprobe.windtunnel.report.seeds import seeds_figure
from geoprobe.windtunnel.seeds import SeedRun, SeedSpread, TunnelSeeds, parse_seeds, seed_list


@pytest.mark.parametrize(
    "value, want",
    [("0,1,2", (0, 1, 2)), (" 4, 9 ", (4, 9)), ("3", 3), (5, 5), ([7, 2], (7, 2)), ((0, 1), (0, 1))],
)
def test_seeds_are_a_count_or_a_list(value, want):
    assert parse_seeds(value) == want


@pytest.mark.parametrize(
    "value, words",
    [
        ("1", "between 2 and 50"),
        (51, "between 2 and 50"),
        ("0,0", "repeats a seed"),
        ("0,x", "neither a count nor"),
        ("", "neither a count nor"),
        ("-1,2", "outside"),
        ([3], "2 or more seeds"),
        (True, "not a count"),
        (2.5, "not a count"),
    ],
)
def test_bad_seeds_are_one_line_naming_the_flag(value, words):
    with pytest.raises(GeoprobeError) as e:
        parse_seeds(value)
    msg = str(e.value)
    assert words in msg and "--seeds" in msg and "\n" not in msg


def test_a_count_starts_at_seed_and_a_list_refuses_a_start():
    assert seed_list(3, 0) == (0, 1, 2) and seed_list(2, 10) == (10, 11)
    assert seed_list((5, 1), 0) == (5, 1)
    with pytest.raises(GeoprobeError, match="--seed 4 with a list"):
        seed_list((0, 1), 4)


def test_spread_against_a_hand_computation():
    s = SeedSpread.of("mae_paper", 20, [0.1, 0.2, 0.4])
    mean = 0.7 / 3
    sd = math.sqrt(((0.1 - mean) ** 2 + (0.2 - mean) ** 2 + (0.4 - mean) ** 2) / 2)  # 0.152753
    t975_2 = 4.302652729911275  # Student t, 2 degrees of freedom, 97.5 % quantile (tables: 4.303)
    half = t975_2 * sd / math.sqrt(3)
    assert s.mean.value == pytest.approx(mean, abs=1e-12)
    assert s.sd == pytest.approx(sd, abs=1e-12) and s.sd == pytest.approx(0.152753, abs=1e-6)
    assert (s.mean.low, s.mean.high) == pytest.approx((mean - half, mean + half), abs=1e-9)
    assert (s.min, s.max) == (0.1, 0.4) and s.values == (0.1, 0.2, 0.4)


def _metrics(label: str, K: int, mae: float) -> TunnelMetrics:
    e = Estimate(mae, mae * 0.9, mae * 1.1)
    return TunnelMetrics(
        label, K, 16, e, e, e, [1.0 + mae] * K, [1.0] * K, [mae] * K, 1.0
    )  # model curve sits mae above Bayes


def _seeds(values: dict[int, tuple[float, float]]) -> TunnelSeeds:
    runs = tuple(
        SeedRun(
            s,
            f"seed-{s}",
            {
                "transformer": (_metrics("transformer", 6, t), _metrics("transformer", 9, 2 * t)),
                "mlp": (_metrics("mlp", 6, m), _metrics("mlp", 9, m)),
            },
            {"transformer": "sha256:x"},
        )
        for s, (t, m) in values.items()
    )
    return TunnelSeeds(task={"name": "hmm", "K": 6, "S": 3, "V": 3}, scale="tiny", runs=runs)


def test_tunnel_seeds_spread_round_trip_page_and_registry(tmp_path):
    from geoprobe.recipes import load_result

    res = _seeds({0: (0.02, 0.4), 1: (0.03, 0.35), 2: (0.01, 0.45)})
    sp = res.spread("transformer")
    assert sp.K == 6 and sp.values == (0.02, 0.03, 0.01) and sp.mean.value == pytest.approx(0.02)
    assert res.spread("transformer", 9).values == (0.04, 0.06, 0.02)
    assert res.spread("mlp", measure="kl").max == 0.45
    path = res.save(tmp_path / "seeds.json")
    back = load_result(tmp_path)
    assert isinstance(back, TunnelSeeds) and back == res and back.seeds == (0, 1, 2)
    page = back.report(tmp_path / "seeds.html").read_text(encoding="utf-8")
    assert 'id="seeds"' in page and "0.02, 0.03, 0.01" in page and "Figure 11" in page
    fig = seeds_figure(back)
    assert len(fig.data) == 2 * 2 * 3  # two lengths x two learners x three seeds, one line each
    assert path.name == "seeds.json"


def test_tunnel_seeds_refuses_one_seed_or_mismatched_runs():
    with pytest.raises(ValueError, match="2 or more"):
        _seeds({0: (0.02, 0.4)})
    good = _seeds({0: (0.02, 0.4), 1: (0.03, 0.35)})
    odd = SeedRun(5, "seed-5", {"transformer": (_metrics("transformer", 6, 0.1),)})
    with pytest.raises(ValueError, match="seed 5"):
        TunnelSeeds(task=good.task, scale="tiny", runs=(*good.runs, odd))


def test_the_recipe_key_seeds(tmp_path):
    from geoprobe.recipes import load_probe

    p = tmp_path / "wt.toml"
    p.write_text('[probe]\ncommand = "windtunnel"\n[windtunnel]\nscale = "tiny"\nseeds = [0, 1, 2]\n')
    assert load_probe(p).config.seeds == (0, 1, 2)
    p.write_text('[probe]\ncommand = "windtunnel"\n[windtunnel]\nscale = "tiny"\nseeds = 4\n')
    assert load_probe(p).config.seeds == 4
    p.write_text('[probe]\ncommand = "windtunnel"\n[windtunnel]\nscale = "tiny"\nseeds = 1\n')
    with pytest.raises(GeoprobeError, match="--seeds"):
        load_probe(p)
