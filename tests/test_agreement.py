"""Judge alignment, consistency and annotation statistics against their reference libraries,
and the errors a hostile labels or annotations file gets, at its lines."""

from __future__ import annotations

import json
import random

import pytest

from pytest_elizon_eval import agreement
from pytest_elizon_eval.agreement import LabelsProblem

sklearn_metrics = pytest.importorskip("sklearn.metrics")
scipy_stats = pytest.importorskip("scipy.stats")
inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")


def _pairs(seed: int, n: int) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        human = rng.random()
        pairs.append((human, min(1.0, max(0.0, human + rng.gauss(0, 0.3)))))
    return pairs


@pytest.mark.parametrize("seed", range(8))
def test_alignment_matches_sklearn_scipy(seed: int) -> None:
    pairs = _pairs(seed, 20 + seed * 7)
    result = agreement.alignment(pairs, threshold=0.6)
    human = [int(h >= 0.6) for h, _ in pairs]
    judge = [int(j >= 0.6) for _, j in pairs]
    assert result.cohen_kappa == pytest.approx(sklearn_metrics.cohen_kappa_score(human, judge))
    r = scipy_stats.pearsonr([h for h, _ in pairs], [j for _, j in pairs])
    assert result.pearson == pytest.approx(r[0])
    tn, fp, fn, tp = sklearn_metrics.confusion_matrix(human, judge, labels=[0, 1]).ravel()
    assert (result.true_pos, result.true_neg, result.false_pos, result.false_neg) == \
        (tp, tn, fp, fn)
    assert result.agreement_rate == pytest.approx(sklearn_metrics.accuracy_score(human, judge))
    assert result.mean_absolute_error == pytest.approx(
        sklearn_metrics.mean_absolute_error([h for h, _ in pairs], [j for _, j in pairs]))
    low, high = result.kappa_interval  # type: ignore[misc]
    assert low < result.cohen_kappa < high  # type: ignore[operator]


def test_kappa_interval_is_statsmodels_not_cohens_1960_error() -> None:
    # 40 pairs, 29 agree on True, 1 on False: Cohen's (1960) SE √(pₒ(1−pₒ)/(n(1−pₑ)²))
    # is 1.6× statsmodels' (Fleiss, Cohen and Everitt 1969)
    human = [True] * 34 + [False] * 6
    judge = [True] * 29 + [False] * 5 + [True] * 5 + [False] * 1
    kappa, (low, high) = agreement.cohen_kappa(human, judge)  # type: ignore[misc]
    want = inter_rater.cohens_kappa([[29, 5], [5, 1]])
    assert kappa == pytest.approx(want.kappa)
    assert (low, high) == pytest.approx((want.kappa_low, want.kappa_upp))
    observed, expected = 30 / 40, (34 / 40) ** 2 + (6 / 40) ** 2
    cohen = (observed * (1 - observed) / (40 * (1 - expected) ** 2)) ** 0.5
    assert cohen / want.std_kappa > 1.6


def test_kappa_compares_labels_by_value_not_identity() -> None:
    # 0/1 and numpy bools are pass/fail too: identity against True/False counted none of them
    numpy = pytest.importorskip("numpy")
    first, second = [1, 1, 0, 0, 1], [1, 0, 0, 0, 1]
    want = inter_rater.cohens_kappa([[2, 1], [0, 2]])
    for kind in (list, lambda xs: list(numpy.array(xs, dtype=bool))):
        kappa, (low, high) = agreement.cohen_kappa(kind(first), kind(second))  # type: ignore[misc]
        assert kappa == pytest.approx(want.kappa) == pytest.approx(8 / 13)
        assert (low, high) == pytest.approx((max(-1.0, want.kappa_low),
                                             min(1.0, want.kappa_upp)))


def test_kappa_undefined_and_landis_koch() -> None:
    assert agreement.cohen_kappa([True, True], [True, True]) == (None, None)
    result = agreement.alignment([(1.0, 1.0), (0.9, 0.8)])
    assert result.cohen_kappa is None
    assert "undefined" in (result.note or "")
    assert "κ undefined" in result.summary()
    assert [agreement.landis_koch(k) for k in (-0.1, 0.1, 0.3, 0.5, 0.7, 0.9)] == [
        "poor", "slight", "fair", "moderate", "substantial", "almost perfect"]
    with pytest.raises(ValueError, match="at least one"):
        agreement.alignment([])


@pytest.mark.parametrize("seed", range(6))
def test_fleiss_kappa_matches_statsmodels(seed: int) -> None:
    rng = random.Random(seed)
    raters = 3 + seed % 3
    table = []
    for _ in range(15):
        row = [0, 0, 0]
        for _ in range(raters):
            row[min(2, int(rng.random() * 3 * rng.random() + (seed % 2)))] += 1
        table.append(row)
    assert agreement.fleiss_kappa(table) == pytest.approx(
        inter_rater.fleiss_kappa(table, method="fleiss"))


def test_fleiss_kappa_null_for_uneven_raters() -> None:
    assert agreement.fleiss_kappa([[2, 1], [1, 1]]) is None
    assert agreement.fleiss_kappa([[1, 0], [0, 1]]) is None


def test_consistency_matches_the_seed() -> None:
    result = agreement.consistency([0.7, 0.8, 0.75])
    assert result.mean == pytest.approx(0.75)
    assert result.range == pytest.approx(0.1)
    assert result.consistent
    assert result.std_dev == pytest.approx(0.0408248, rel=1e-5)
    assert not agreement.consistency([0.2, 0.9], tolerance=0.5).consistent


def _jsonl(*rows: object) -> bytes:
    return "\n".join(json.dumps(r) for r in rows).encode()


def test_labels_read_jsonl_and_csv() -> None:
    rows = agreement.read_labels(_jsonl({"output": "a", "human": "pass"},
                                        {"output": "b", "human": 0.2, "input": {"q": 1},
                                         "rubric": "polite"}), "l.jsonl", ".jsonl")
    assert [(r.line, r.human, r.rubric) for r in rows] == [(1, 1.0, None), (2, 0.2, "polite")]
    csv_rows = agreement.read_labels(b"output,human\n\"x, y\",fail\nz,0.9\n", "l.csv", ".csv")
    assert [(r.line, r.output, r.human) for r in csv_rows] == [(2, "x, y", 0.0), (3, "z", 0.9)]


@pytest.mark.parametrize(("data", "suffix", "message"), [
    (b"", ".jsonl", "l: the file has no rows"),
    (b"\n\n", ".csv", "l: the file has no rows"),
    (_jsonl({"output": "a", "human": "pass"}, {"output": "b", "human": 1}), ".jsonl",
     "every label is pass (at the threshold 0.5): Cohen's κ is undefined with one class only"),
    (_jsonl({"output": "a", "human": "pass"}, {"output": 3, "human": "fail"}), ".jsonl",
     "l:2: 'output' is int, not text"),
    (_jsonl({"output": "a", "human": "maybe"}), ".jsonl",
     "l:1: 'human' is 'maybe'; it must be a score from 0 to 1 or 'pass'/'fail'"),
    (_jsonl({"output": "a", "human": True}), ".jsonl", "l:1: 'human' is True"),
    (b'{"output": "a", "human": 1e999}', ".jsonl", "l:1: 'human' is inf"),
    (b'{"output": "a", "human": ' + b"9" * 500 + b"}", ".jsonl", "l:1: 'human' is 999"),
    (b'{"output": "a"}\n[1]\n{"output": ', ".jsonl", "l:2: a row must be a JSON object"),
    (b'{"output": "a"}\n[1]\n{"output": ', ".jsonl", "l:3: not JSON"),
    (_jsonl({"output": "a", "human": 1, "score": 2}), ".jsonl", "l:1: unknown column 'score'"),
    (b"output,human\na,1,extra\n", ".csv", "l:2: 3 cells, but the header names 2 columns"),
    (b"output,human\na,2\n", ".csv", "l:2: 'human' is 2.0"),
    (b"\xff\xfe", ".jsonl", "l:1: not UTF-8 text"),
    (b"{}", ".txt", "a labels file is .jsonl or .csv"),
])
def test_hostile_labels_files(data: bytes, suffix: str, message: str) -> None:
    with pytest.raises(LabelsProblem) as caught:
        agreement.read_labels(data, "l", suffix)
    assert message in str(caught.value)


def test_huge_labels_file_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agreement, "MAX_BYTES", 100)
    with pytest.raises(LabelsProblem, match="the file is 200 bytes; the limit is 100"):
        agreement.read_labels(b" " * 200, "l", ".jsonl")
    monkeypatch.setattr(agreement, "MAX_ROWS", 2)
    with pytest.raises(LabelsProblem, match="3 rows; the limit is 2"):
        agreement.read_labels(_jsonl(*[{"output": "a", "human": 1}] * 3), "l", ".jsonl")


def test_annotations_summary() -> None:
    rows = agreement.read_annotations(_jsonl(
        {"case": "a", "annotator": "ann", "label": "pass", "output": "A"},
        {"case": "a", "annotator": "bo", "label": "pass"},
        {"case": "a", "annotator": "cy", "label": "fail"},
        {"case": "b", "annotator": "ann", "label": "fail", "confidence": 0.9},
        {"case": "b", "annotator": "bo", "label": "pass", "confidence": 0.4},
        {"case": "b", "annotator": "cy", "label": "fail"},
    ), "a.jsonl", ".jsonl")
    summary = agreement.summarize_annotations(rows)
    assert [(c.case, c.gold, round(c.agreement, 3), c.output) for c in summary.cases] == [
        ("a", "pass", 0.667, "A"), ("b", "fail", 0.667, None)]
    assert summary.disputed == ("a", "b")
    assert summary.fleiss_kappa == pytest.approx(
        inter_rater.fleiss_kappa([[2, 1], [1, 2]], method="fleiss"))
    uneven = agreement.summarize_annotations(rows[:5], dispute_below=0.5)
    assert uneven.fleiss_kappa is None
    assert uneven.disputed == ()
    assert "different numbers of raters (2–3)" in uneven.notes[0]


def test_hostile_annotations() -> None:
    with pytest.raises(LabelsProblem) as caught:
        agreement.read_annotations(_jsonl(
            {"case": "a", "annotator": "x"}, {"case": "a", "annotator": "y", "label": "p",
                                              "confidence": 3},
            {"annotator": "y", "label": "p"}, {"case": "a", "annotator": "y", "label": [1]},
            {"case": "a", "annotator": "y", "label": "p", "who": 1}), "a", ".jsonl")
    assert str(caught.value).splitlines() == [
        "a:1: 'label' is missing or not text or a number",
        "a:2: 'confidence' must be a number from 0 to 1",
        "a:3: 'case' is missing or not text",
        "a:4: 'label' is missing or not text or a number",
        "a:5: unknown column 'who'; an annotation row has case, annotator, label, and "
        "optionally confidence, output, input"]


def test_cli_annotations_summarize_and_gold(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from pytest_elizon_eval import cli

    source = tmp_path / "ann.csv"
    source.write_text("case,annotator,label,output\n"
                      "refund,ann,pass,We refund in 30 days\nrefund,bo,pass,\nrefund,cy,fail,\n"
                      "rude,ann,fail,Go away\nrude,bo,fail,\nrude,cy,fail,\n")
    gold = tmp_path / "gold.jsonl"
    assert cli.main(["annotations", "summarize", str(source), "--gold", str(gold)]) == 0
    shown = capsys.readouterr().out
    assert "refund: gold 'pass', agreement 67% of 3  DISPUTED" in shown
    assert "rude: gold 'fail', agreement 100% of 3\n" in shown
    assert "2 cases, overall agreement 83%, 1 disputed (agreement below 0.8), Fleiss' κ " \
        "0.250 (fair)" in shown
    written = [json.loads(line) for line in gold.read_text().splitlines()]
    assert written == [{"output": "We refund in 30 days", "human": "pass"},
                       {"output": "Go away", "human": "fail"}]
    # the gold file is a labels file alignment reads as it is
    assert [r.human for r in agreement.read_labels(gold.read_bytes(), "g", ".jsonl")] == [1, 0]
    assert cli.main(["annotations", "summarize", str(source), "--json",
                     "--dispute-below", "0.5"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["disputed"] == []
    assert data["fleiss_kappa"] == pytest.approx(0.25)


def test_cli_annotations_errors(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from pytest_elizon_eval import cli

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"case": "a", "annotator": "x", "label": "pass"}\n{"case": "a"}\n')
    assert cli.main(["annotations", "summarize", str(bad)]) == 2
    assert f"{bad}:2: 'annotator' is missing or not text" in capsys.readouterr().err
    good = tmp_path / "g.jsonl"
    good.write_text('{"case": "a", "annotator": "x", "label": "meh"}\n')
    assert cli.main(["annotations", "summarize", str(good), "--gold",
                     str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "--gold: case 'a': the gold label 'meh' is neither pass/fail nor a score" in err
    assert not (tmp_path / "o.jsonl").exists()
    assert cli.main(["annotations", "summarize", str(tmp_path / "none.csv")]) == 2
    assert "none.csv: cannot read the file: No such file or directory" in capsys.readouterr().err
