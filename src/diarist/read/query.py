"""Query analysis: the distinctive terms of a question and the time span it names.

Both are small, explainable signals for the second stage. Neither is trusted on its own: they
re-order candidates that the two channels already found.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..lexical import analyze

# Words that open questions and sentences: capitalised there by grammar, not by being names.
_SENTENCE_OPENERS = frozenset(
    """what who whom whose which when where why how is are was were do does did can could
    would should will shall may might have has had tell remind please i my in on at for from
    the a an and but so if since after before during""".split()
)
_WORD = re.compile(r"[^\W_][\w'’.-]*", re.UNICODE)
_SENTENCE_BREAK = re.compile(r"[.!?]\s+|^\s*|\n")


@dataclass(frozen=True)
class QueryTerms:
    terms: list[str]  # every index term of the query
    proper_nouns: list[str]  # index terms attested as names: capitalised, not sentence-initial
    quoted: list[str]  # phrases the user put in quotes, verbatim


def _sentence_starts(text: str) -> set[int]:
    return {m.end() for m in _SENTENCE_BREAK.finditer(text)}


def _name_words(text: str) -> list[tuple[int, int, str, bool]]:
    """The words attested as names: where each starts and ends in the text, the word, and
    whether it opens a sentence.

    A capital at the start of a sentence is grammar, not evidence of a name, so the opening
    word only counts when it is capitalised beyond its first letter (an acronym: "NASA") or
    recurs capitalised later in the text.
    """
    starts = _sentence_starts(text)
    later_capitalised = set()
    candidates: list[tuple[int, int, str]] = []
    for m in _WORD.finditer(text):
        word = m.group(0).strip("'’.-")
        if not word or not word[0].isupper():
            continue
        candidates.append((m.start(), m.end(), word))
        if m.start() not in starts:
            later_capitalised.add(word.casefold())
    out: list[tuple[int, int, str, bool]] = []
    for start, end, word in candidates:
        folded = word.casefold()
        opening = start in starts
        acronym = len(word) > 1 and word.isupper()
        if opening and not acronym and folded not in later_capitalised:
            continue
        if folded in _SENTENCE_OPENERS and not acronym:
            continue
        out.append((start, end, word, opening))
    return out


def proper_nouns(text: str) -> list[str]:
    """Capitalised words that do not open a sentence ("What shift was Admon..." -> ["admon"]),
    as distinct index terms (see ``_name_words``)."""
    out: list[str] = []
    for _, _, word, _ in _name_words(text):
        for term in analyze(word):
            if term not in out:
                out.append(term)
    return out


def proper_noun_phrases(text: str) -> list[list[str]]:
    """The names of a text whole, each as its index terms: name words with nothing but spaces
    between them are one name ("Which planet has the Great Red Spot?" -> [["great", "red",
    "spot"]]; "Caroline and Melanie" -> [["carolin"], ["melani"]])."""
    phrases: list[list[str]] = []
    previous_end = None
    for start, end, word, opens_sentence in _name_words(text):
        terms = analyze(word)
        # A name does not run on into the next sentence.
        if previous_end is not None and not opens_sentence and not text[previous_end:start].strip():
            phrases[-1].extend(terms)
        else:
            phrases.append(list(terms))
        previous_end = end
    return [phrase for phrase in phrases if phrase]


def analyze_query(text: str) -> QueryTerms:
    quoted = [q.strip() for q in re.findall(r"[\"“”]([^\"“”]{2,})[\"“”]", text) if q.strip()]
    return QueryTerms(terms=analyze(text), proper_nouns=proper_nouns(text), quoted=quoted)


# -- time ------------------------------------------------------------------------------------

_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2,
    "few": 3, "several": 3,
}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
_NUM = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple of|few|several)"


@dataclass(frozen=True)
class TimeSpan:
    """A half-open interval [start, end) the question points at, and the words that named it."""

    start: datetime
    end: datetime
    expression: str

    def contains(self, moment: datetime) -> bool:
        return self.start <= moment < self.end


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER_WORDS[word]


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def resolve_time(question: str, now: datetime) -> TimeSpan | None:
    """The span a question names relative to ``now`` ("last Sunday", "in May", "two weeks ago",
    "in the past three months", "yesterday"), or absolutely ("October 13, 2023", "the summer of
    2022", "the first weekend of October 2023": a part of a month is the month), or None when it
    names none.

    "N units ago" is fuzzy in speech: the span is widened by a third of the distance each way.
    A span beyond the years a datetime holds ("3000 years ago", "in December 9999") is none.
    """
    try:
        return _resolve_time(question, now)
    except (OverflowError, ValueError):
        return None


_MONTH_NAMES = "|".join(sorted((k for k in _MONTHS if len(k) > 3 or k == "may"), key=len, reverse=True))
#: "the first weekend of", "the last two weeks of", "the second half of" a named month: read as
#: the month itself. Checked before the relative rules, which would otherwise read "the last two
#: weeks of August 2023" as the two weeks before today. The month, not its part: the session
#: that tells of a weekend is often dated days after it, later in the month.
_PART_OF_MONTH = re.compile(
    rf"\b(?:in |during |over |on )?(?:the )?(?:first|second|third|fourth|last|final|past|1st|2nd|3rd|4th)"
    rf"(?: {_NUM})? (?:days?|weeks?|weekends?|fortnight|half) of ({_MONTH_NAMES})\b(?:,? (\d{{4}}))?"
)


def _month(month_name: str, year: str | None, today: datetime, expression: str) -> TimeSpan:
    """The whole named month: of the year given, else the latest one that has begun."""
    month = _MONTHS[month_name]
    start = datetime(int(year) if year else _last_year_with(month, 1, today), month, 1)
    end = datetime(start.year + (month == 12), month % 12 + 1, 1)
    return TimeSpan(start, end, expression)


def _resolve_time(question: str, now: datetime) -> TimeSpan | None:
    text = question.lower()
    today = _day(now)
    m = _PART_OF_MONTH.search(text)
    if m:
        return _month(m.group(2), m.group(3), today, m.group(0))
    m = re.search(rf"\b{_NUM} (day|week|month|year)s? ago\b", text)
    if m:
        days = _count(m.group(1)) * _UNIT_DAYS[m.group(2)]
        slack = max(1, days // 3)
        centre = today - timedelta(days=days)
        return TimeSpan(centre - timedelta(days=slack), centre + timedelta(days=slack + 1), m.group(0))
    m = re.search(rf"\b(?:in |over |during )?the (?:past|last) (?:{_NUM} )?(day|week|month|year)s?\b", text)
    if m:
        n = _count(m.group(1)) if m.group(1) else 1
        days = n * _UNIT_DAYS[m.group(2)]
        return TimeSpan(today - timedelta(days=days), today + timedelta(days=1), m.group(0))
    m = re.search(r"\byesterday\b", text)
    if m:
        return TimeSpan(today - timedelta(days=1), today, m.group(0))
    m = re.search(r"\blast (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", text)
    if m:
        back = (today.weekday() - _WEEKDAYS[m.group(1)]) % 7 or 7
        day = today - timedelta(days=back)
        return TimeSpan(day, day + timedelta(days=1), m.group(0))
    m = re.search(r"\blast (week|month|year)\b", text)
    if m:
        days = _UNIT_DAYS[m.group(1)]
        return TimeSpan(today - timedelta(days=2 * days), today, m.group(0))
    day = _named_day(text, _MONTH_NAMES, today)
    if day is not None:
        return day
    m = re.search(rf"\b(?:in|during|back in|early|late|mid|(?:the )?(?:beginning|start|middle|end) of) "
                  rf"({_MONTH_NAMES})\b(?:,? (\d{{4}}))?", text)
    if m:
        return _month(m.group(1), m.group(2), today, m.group(0))
    season = _season(text, today)
    if season is not None:
        return season
    m = re.search(r"\b(?:in|during|back in|since) (19\d\d|20\d\d)\b", text)
    if m:
        year = int(m.group(1))
        return TimeSpan(datetime(year, 1, 1), datetime(year + 1, 1, 1), m.group(0))
    return None


def _last_year_with(month: int, day: int, today: datetime) -> int:
    """The year of the latest (month, day) not after today: "in May" asked in March is last May."""
    return today.year if (month, day) <= (today.month, today.day) else today.year - 1


def _named_day(text: str, month_names: str, today: datetime) -> TimeSpan | None:
    """"October 13, 2023", "on 13 October", "the 13th of October 2023": that day."""
    m = re.search(rf"\b({month_names}) (\d{{1,2}})(?:st|nd|rd|th)?\b(?:,? (\d{{4}}))?", text)
    if m:
        month, number, year = _MONTHS[m.group(1)], int(m.group(2)), m.group(3)
    else:
        m = re.search(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?({month_names})\b(?:,? (\d{{4}}))?", text)
        if not m:
            return None
        month, number, year = _MONTHS[m.group(2)], int(m.group(1)), m.group(3)
    if not 1 <= number <= calendar.monthrange(int(year) if year else today.year, month)[1]:
        return None  # "May 2023" read as a day: not one
    start = datetime(int(year) if year else _last_year_with(month, number, today), month, number)
    return TimeSpan(start, start + timedelta(days=1), m.group(0))


_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}  # first month, northern


def _season(text: str, today: datetime) -> TimeSpan | None:
    """"last summer", "this winter", "in the summer of 2022", "summer 2022": three months."""
    m = re.search(r"\b(last|this|past|in the|in|during the|during) (spring|summer|fall|autumn|winter)"
                  r"\b(?:(?: of)? (\d{4}))?", text)
    if not m:
        m = re.search(r"\b()(spring|summer|fall|autumn|winter) (\d{4})\b", text)
        if not m:
            return None
    which, first, year = m.group(1), _SEASONS[m.group(2)], m.group(3)
    def span(start_year: int) -> tuple[datetime, datetime]:
        return datetime(start_year, first, 1), datetime(start_year + (first + 3 > 12), (first + 2) % 12 + 1, 1)

    if year:
        start, end = span(int(year))
    else:
        # The season's latest start not after today; "last" means the one before, if today is in it.
        start, end = span(today.year if first <= today.month else today.year - 1)
        if which in ("last", "past") and today < end:
            start, end = span(start.year - 1)
    return TimeSpan(start, end, m.group(0))
