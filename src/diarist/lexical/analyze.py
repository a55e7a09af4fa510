"""Text analysis for the lexical channel: the same terms at index time and at query time.

Terms are stemmed with the Snowball English stemmer (Porter2, as Lucene's English analyzer,
Pyserini and bm25s do), so "painting", "paints" and "painted" meet "paint": on the dev sets
BM25 alone gained 2.7 points of LoCoMo recall_any@5 and 4.8 of LongMemEval recall_all@10
(BENCHMARKS.md, "Stemmed terms"). PyStemmer is Snowball's C implementation.
"""

from __future__ import annotations

import re
import threading
import unicodedata

import Stemmer

from .language import ENGLISH, UNSPACED, detect
from .stopwords import ENGLISH_STOPWORDS as STOPWORDS
from .stopwords import stopwords

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


# Words a question uses that carry no evidence of which memory answers it (the memory side is
# analysed with STOPWORDS alone, so an index is unchanged). Matched before stemming.
#: Temporal fillers: they ask for the current state ("Where do I live now?"), which the second
#: stage and the block's dates answer; as terms they match whichever chat says "now".
QUESTION_FILLERS = frozenset(
    """now nowadays currently current presently still anymore today""".split()
)
#: Scaffolding: pieces of contractions ("I'm", "don't") and the words around a request. ("won" of
#: "won't" is a word too; "s" is taken out only after the words it contracts, below.)
QUESTION_SCAFFOLDING = frozenset(
    """t m d ll re ve don doesn didn isn aren wasn weren wouldn couldn shouldn haven hasn hadn
    am please""".split()
)
#: The words whose "'s" is "is", "has" or "us" ("what's", "where's", "let's"): the "s" after them
#: is scaffolding; after a name it is a possessive ("Calvin's concert") and is searched as before.
CONTRACTED = frozenset("what where who how when why it that there here he she let".split())
QUESTION_STOPWORDS = STOPWORDS | QUESTION_FILLERS | QUESTION_SCAFFOLDING
#: Per language other than English: words of its questions' frames, left out of a question as its
#: stopwords are (matched after ``NORMALISE``, before stemming; the passages keep them). Arabic: the
#: frames "ما اسم", "كم عدد", "أي نوع", "اذكر" (what is the name of, how many, what kind of, name...).
#: Read off failing development questions: a fit (docs/languages.md).
QUESTION_STOPWORDS_IN: dict[str, frozenset[str]] = {"ar": frozenset("اسم الاسم عدد نوع اذكر".split())}
#: Phrases of the same kinds, taken out of a question before it is analysed.
QUESTION_PHRASES = re.compile(
    r"\b(?:these days|this days|at the moment|right now|at present|for now|as of now|as of today|"
    r"(?:tell|remind|show) me|(?:do|did|can|could|would|will) you (?:know|remember|recall|tell me|remind me)|"
    r"i (?:wonder|forget|forgot)|(?:can|could|would) you)\b",
    re.IGNORECASE,
)

#: Version of the analyzer and postings format; an index written by another version is not used.
#: 1: posting blocks of 1,024 chunk ids; 2: of 8,192 (the stores' migrations repack 1 into 2);
#: 3: stemmed terms (the stores' migrations re-analyse every chunk of a version-2 index);
#: 4: Arabic words lose the clitics Snowball leaves on them (``arabic_word``), Russian
#: interrogatives are stopwords (the stores' migrations re-analyse the apps of a version-3 index
#: that hold Arabic or Russian chunks, and mark the others current: their terms are the same).
#: 5: Arabic words lose a preposition before the article ("بالكتاب", "للكتاب"); Arabic, Persian and
#: Urdu write their digits as ASCII ones (the stores' migrations re-analyse the apps of a version-4
#: index that hold chunks in them, and mark the others current).
VERSION = 5
#: The chunk languages whose terms a version changed from the one before it. An index of the
#: version before that holds no chunk in them is the same index.
CHANGED_LANGUAGES = {4: ("ar", "ru"), 5: ("ar", "fa", "ur")}

_local = threading.local()  # a PyStemmer object is not to be shared between threads
# Each distinct word is stemmed once per process: a dictionary lookup per token after that
# (the vocabulary of a memory is small beside its token count). Bounded so that a stream of
# unique tokens (ids, hashes) cannot grow it without end; past the bound words are stemmed
# each time, with the same result.
_STEMS: dict[str, str] = {}
_STEMS_MAX = 1 << 20


def stem(word: str) -> str:
    """A case-folded word's Snowball English stem."""
    found = _STEMS.get(word)
    if found is None:
        stemmer = getattr(_local, "stemmer", None)
        if stemmer is None:
            stemmer = _local.stemmer = Stemmer.Stemmer("english")
        found = stemmer.stemWord(word)
        if len(_STEMS) < _STEMS_MAX:
            _STEMS[word] = found
    return found


def analyze(text: str, *, keep_stopwords: bool = False, language: str | None = None) -> list[str]:
    """Text -> index terms: NFKC-normalised, case-folded runs of letters and digits, stemmed;
    stopwords (matched before stemming) left out unless ``keep_stopwords``.

    ``language``: the text's (ISO 639-1); None: detected (``language.detect``). English text is
    analysed as it always was; another language by ``analyze_in``."""
    if (language or detect(text)) != ENGLISH:
        return analyze_in(text, language or detect(text), keep_stopwords=keep_stopwords)
    text = unicodedata.normalize("NFKC", text).casefold()
    words = _TOKEN.findall(text)
    get = _STEMS.get
    if keep_stopwords:
        return [get(w) or stem(w) for w in words]
    return [get(w) or stem(w) for w in words if w not in STOPWORDS]


def analyze_passage(text: str) -> tuple[list[str], str]:
    """A passage to index: its terms and the language they were analysed in (to be recorded
    with them: deletes unindex with it)."""
    language = detect(text)
    return analyze(text, language=language), language


def analyze_question(text: str) -> list[str]:
    """A question's index terms: as ``analyze`` gives them, less the words and phrases that carry
    no evidence in a question (``QUESTION_STOPWORDS``, ``QUESTION_PHRASES``). A question made only
    of them keeps its plain terms (something must be searched for). A question in another
    language is analysed as a passage in it."""
    language = detect(text)
    if language != ENGLISH:  # the question scaffolding below is English's
        scaffolding = QUESTION_STOPWORDS_IN.get(language)
        terms = analyze_in(text, language, leave_out=scaffolding) if scaffolding else []
        return terms or analyze_in(text, language)
    kept = QUESTION_PHRASES.sub(" ", unicodedata.normalize("NFKC", text))
    words = _TOKEN.findall(unicodedata.normalize("NFKC", kept).casefold())
    get = _STEMS.get
    terms = [get(w) or stem(w) for n, w in enumerate(words)
             if w not in QUESTION_STOPWORDS and not (w == "s" and n and words[n - 1] in CONTRACTED)]
    return terms or analyze(text)


# -- languages other than English ---------------------------------------------------------------

#: ISO 639-1 -> the Snowball stemmer PyStemmer names it by.
SNOWBALL = {"ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech", "da": "danish",
            "nl": "dutch", "eo": "esperanto", "et": "estonian", "fi": "finnish", "fr": "french", "de": "german",
            "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian",
            "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "fa": "persian", "pl": "polish",
            "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian", "es": "spanish",
            "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish"}

# Combining marks (Unicode Mn, Mc) belong to the word they are in: Devanagari's vowel signs,
# Arabic's vowel marks. English's tokens split at them ("हिन्दी" gave "ह", "न", "द").
_MARKS = "".join(re.escape(chr(c)) for c in range(0x300, 0x10000)
                 if unicodedata.category(chr(c)) in ("Mn", "Mc"))
_WORD = re.compile(rf"(?:[^\W_]|[{_MARKS}])+")
# Runs of a script written without spaces (Han, kana, Thai), and of the rest, inside a word.
_UNSPACED_RUN = re.compile(r"([\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
                           r"\uff66-\uff9f\u0e00-\u0e7f]+)")
_LANGUAGE_STEMS: dict[str, dict[str, str]] = {}


def stem_in(language: str, word: str) -> str:
    """A case-folded word's Snowball stem in the language (the word itself where Snowball has
    no stemmer for it)."""
    cache = _LANGUAGE_STEMS.setdefault(language, {})
    found = cache.get(word)
    if found is None:
        name = SNOWBALL.get(language)
        if name is None:
            return word
        stemmers = getattr(_local, "stemmers", None)
        if stemmers is None:
            stemmers = _local.stemmers = {}
        stemmer = stemmers.get(name) or stemmers.setdefault(name, Stemmer.Stemmer(name))
        found = stemmer.stemWord(word)
        if len(cache) < _STEMS_MAX:
            cache[word] = found
    return found


# Arabic writes the conjunctions "و" (and) and "ف" (so) as one word with what follows. Snowball's
# Arabic stemmer takes a conjunction off a bare word ("وكتاب" -> كتاب) and the article off a word
# ("الكتاب" -> كتاب), but not both: "والكتاب" stayed whole and never met "الكتاب" or "كتاب".
# (Snowball already removes tatweel and the vowel marks, writes أ إ آ as ا and ى as ي, and takes
# ة off as a suffix. Doing the first again changes no stem; writing أ إ آ, ى or ة over before it
# ranked XQuAD's Arabic worse: docs/languages.md.)
_AR_CONJUNCTIONS = ("و", "ف")
_AR_ARTICLE = "ال"
#: Letters a word must keep after "و/ف" + "ال" for the conjunction to go: "والده" (his father)
#: and "والي" (governor) are words of their own, not "و" + "ال" + two letters.
AR_MIN_STEM = 3


# The prepositions "ل" (for), "ب" (with), "ك" (as) before a word that begins with a hamza on its
# alef (أ إ آ): Snowball keeps them ("لأول" stayed "لاول", never "اول"); no Arabic root begins
# with one of them followed by that alef and two more letters.
_AR_PREPOSITIONS = ("ل", "ب", "ك")
_AR_HAMZA_ALEF = ("أ", "إ", "آ")
_AR_CLITICS = _AR_CONJUNCTIONS + _AR_PREPOSITIONS


def arabic_preposition_article(word: str) -> str | None:
    """The word without a preposition before the article, after an optional conjunction, when
    AR_MIN_STEM letters follow the article ("بالكتاب", "وبالكتاب" -> "الكتاب"; ل + ال is written
    لل: "للكتاب" -> "الكتاب"); None when it has none. Snowball takes these off only from long
    words (بال, كال: more than 6 letters; لل: more than 5), so "باللغة" never met "اللغة"."""
    body = word[1:] if word[0] in _AR_CONJUNCTIONS and len(word) > AR_MIN_STEM else word
    if body[0] in _AR_PREPOSITIONS and body[1:3] == _AR_ARTICLE and len(body) - 3 >= AR_MIN_STEM:
        return body[1:]
    if body.startswith("لل") and len(body) - 2 >= AR_MIN_STEM:
        return _AR_ARTICLE + body[2:]
    return None


def arabic_word(word: str) -> str:
    """An Arabic word without the clitics Snowball leaves on it: a conjunction or preposition
    before a stopword ("وفي" -> "في", "لماذا" -> "ماذا": then left out as one); a preposition
    before the article ("بالكتاب" -> "الكتاب", ``arabic_preposition_article``); a conjunction
    before the article ("والكتاب" -> "الكتاب"); a preposition before a hamza's alef ("لأول" ->
    "أول")."""
    if len(word) > 1 and word[0] in _AR_CLITICS and word[1:] in stopwords("ar"):
        return word[1:]
    with_article = arabic_preposition_article(word)
    if with_article is not None:
        return with_article
    if word[0] in _AR_CONJUNCTIONS and word[1:].startswith(_AR_ARTICLE) and len(word) - 1 - len(_AR_ARTICLE) >= AR_MIN_STEM:
        word = word[1:]
    if len(word) > AR_MIN_STEM and word[0] in _AR_PREPOSITIONS and word[1] in _AR_HAMZA_ALEF:
        return word[1:]
    return word


#: The languages that write the Eastern Arabic digits (٠-٩, and Persian's ۰-۹): written as ASCII
#: ones before analysis, so "۲۰۱۵" meets "2015" (NFKC leaves them apart; Snowball's Arabic stemmer
#: rewrites ٠-٩, not ۰-۹, and Persian's and Urdu's analysis kept both).
EASTERN_DIGITS_IN = ("ar", "fa", "ur")
_EASTERN_DIGITS = str.maketrans("٠١٢٣٤٥٦٧٨٩۰۱۲۳۴۵۶۷۸۹", "0123456789" * 2)

#: Words normalised per language before its stopwords and stemmer (a word in, a word out; each
#: leaves the language's stopwords as they are).
NORMALISE = {"ar": arabic_word}


def bigrams(run: str) -> list[str]:
    """A run of unspaced script as overlapping character bigrams ("北京大学": 北京 京大 大学); a
    single character stays itself."""
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]


def analyze_in(text: str, language: str, *, keep_stopwords: bool = False,
               leave_out: frozenset[str] = frozenset()) -> list[str]:
    """Text in a language other than English -> index terms: NFKC, case-folded words (combining
    marks kept in them), that language's stopwords (and ``leave_out``) out and its Snowball stem. Chinese, Japanese
    and Thai are cut into character bigrams; the words of other scripts inside them (a name, a
    term of art) are analysed as English."""
    text = unicodedata.normalize("NFKC", text).casefold()
    if language in EASTERN_DIGITS_IN:
        text = text.translate(_EASTERN_DIGITS)
    words = _WORD.findall(text)
    if language not in UNSPACED:
        stops = frozenset() if keep_stopwords else stopwords(language) | leave_out
        normalise = NORMALISE.get(language)
        if normalise is not None:
            words = [normalise(w) for w in words]
        return [stem_in(language, w) for w in words if w not in stops]
    terms: list[str] = []
    for word in words:
        for n, run in enumerate(_UNSPACED_RUN.split(word)):
            if n % 2:  # the split's odd pieces are the unspaced runs
                terms += bigrams(run)
            elif run:
                terms += [stem(w) for w in _TOKEN.findall(run) if keep_stopwords or w not in STOPWORDS]
    return terms
