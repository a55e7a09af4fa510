"""`diarist bench xquad` on a slice of the committed XQuAD files: rows, summary, verify, compare."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from diarist.bench.cli import bench
from diarist.bench.report import compare_runs, read_rows, verify_run
from diarist.bench.xquad import DATA, DEV_LANGUAGES, load_language, question_row
from diarist.bench.xquad_summary import summarise

ROOT = Path(__file__).resolve().parents[2]


def _slice(tmp_path: Path, langs: tuple[str, ...], paragraphs: int = 5) -> Path:
    """A data folder holding the first article's first paragraphs (and their questions) per language."""
    folder = tmp_path / "xquad"
    folder.mkdir()
    for lang in langs:
        with gzip.open(ROOT / DATA / f"xquad.{lang}.json.gz", "rt", encoding="utf-8") as f:
            full = json.load(f)
        article = dict(full["data"][0], paragraphs=full["data"][0]["paragraphs"][:paragraphs])
        with gzip.open(folder / f"xquad.{lang}.json.gz", "wt", encoding="utf-8") as f:
            json.dump({"data": [article], "version": full.get("version")}, f, ensure_ascii=False)
    return folder


def test_every_language_puts_each_question_under_the_same_paragraph_as_english():
    """Cross-lingual scoring rests on this: a question's paragraph id is the same in every language."""
    english = {qid: pid for qid, _, pid in load_language(ROOT / DATA, "en")[1]}
    assert len(english) == 1190
    for lang in DEV_LANGUAGES:
        paragraphs, questions = load_language(ROOT / DATA, lang)
        assert len(paragraphs) == 240 and len(questions) == 1190, lang
        assert {qid: pid for qid, _, pid in questions} == english, lang


def test_a_row_scores_the_rank_of_its_own_paragraph():
    row = question_row("de", "mono", "q1", "0-2", ["0-1", "0-4", "0-2"], 3.0, "default")
    assert (row["rank"], row["r@1"], row["r@5"]) == (3, False, True)
    missing = question_row("de", "cross", "q1", "0-2", ["0-1"], 3.0, "default")
    assert (missing["rank"], missing["r@1"], missing["r@5"]) == (None, False, False)
    summary = summarise([row, missing], "xquad", "default")
    assert summary["cells"]["mono/de"]["mrr@10"] == pytest.approx(1 / 3, abs=1e-4)
    assert summary["cells"]["cross/de"]["r@5"] == 0.0
    assert {t["cell"]: t["target"] for t in summary["targets"]} == {"mono/de": 0.90, "cross/de": 0.75}


@pytest.mark.slow


def test_bench_xquad_on_five_paragraphs_writes_a_run_that_verifies(tmp_path):
    data = _slice(tmp_path, ("en", "de"))
    out = tmp_path / "run"
    result = CliRunner().invoke(bench, ["xquad", "--data", str(data), "--lang", "en,de", "--cross", "--out", str(out),
                                        "--embedder", "hash", "--no-cache"])
    assert result.exit_code == 0, result.output
    rows = read_rows(out)
    questions = len(load_language(data, "en")[1])
    assert questions > 5
    assert len(rows) == 3 * questions  # en/en, de/de, de/en
    assert {(r["lang"], r["mode"]) for r in rows} == {("en", "mono"), ("de", "mono"), ("de", "cross")}
    assert all(r["gold"] in {f"0-{p}" for p in range(5)} for r in rows)
    # English over English paragraphs with a hashing model: the words are the paragraph's own.
    assert sum(r["r@5"] for r in rows if r["lang"] == "en") / questions > 0.8
    assert verify_run(out) == []
    assert json.loads((out / "manifest.json").read_text())["check"] == f"diarist bench verify {out}"
    # A tampered summary is caught.
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    summary["cells"]["mono/de"]["r@1"] = 1.0 if summary["cells"]["mono/de"]["r@1"] != 1.0 else 0.5
    (out / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    assert any("mono/de.r@1" in p for p in verify_run(out))
    report = compare_runs(out, out)
    assert "| cross/de | r@1 |" in report and "+0 | -0" in report


@pytest.mark.slow
def test_an_unknown_language_is_a_clear_error(tmp_path):
    data = _slice(tmp_path, ("en",))
    result = CliRunner().invoke(bench, ["xquad", "--data", str(data), "--lang", "th", "--out", str(tmp_path / "r"),
                                        "--embedder", "hash", "--no-cache"])
    assert result.exit_code != 0 and "no XQuAD file for language 'th'" in result.output and "have: en" in result.output
