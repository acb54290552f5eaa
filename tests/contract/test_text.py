"""docs/methodology.md §3 "Text": NFKC, casefold, digit runs with decimals or letter runs."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grade_kit.text import brief, contains_run, normalize, normalize_value, parse_number, tokenize


def test_tokens_are_digit_runs_with_decimals_or_letter_runs() -> None:
    assert tokenize("Oct. cancellations: 18.4% (2.6x Sept)") == (
        "oct", "cancellations", "18.4", "2.6", "x", "sept")
    assert tokenize("T-07_a") == ("t", "07", "a")  # underscore and hyphen separate
    assert tokenize("1,234.5") == ("1", "234.5")
    assert tokenize("v2.") == ("v", "2")  # a trailing dot is not a decimal part


def test_nfkc_and_casefold() -> None:
    assert tokenize("ﬁnding") == ("finding",)  # ligature folded by NFKC
    assert tokenize("１８％") == ("18",)  # full-width digits
    assert tokenize("STRASSE Straße") == ("strasse", "strasse")  # casefold, not lower
    assert normalize("  Ünïcode\tTEXT ") == "ünïcode text"


def test_empty_text_has_no_token() -> None:
    assert tokenize("") == ()
    assert tokenize(" -- %% ") == ()
    assert normalize("...") == ""


def test_whole_token_runs_only() -> None:
    assert contains_run("growth of 12.6 points", "12.6")
    assert not contains_run("growth of 12.6 points", "2.6")
    assert not contains_run("cancellations", "cancel")
    assert contains_run("a b c d", "b c")
    assert not contains_run("a b c d", "b d")
    assert not contains_run("a b", "")


def test_string_fact_normalisation() -> None:
    assert normalize_value("  T-07 ") == normalize_value("t-07")
    assert normalize_value("T-07") != normalize_value("T07")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.184, 0.184),
        (7, 7.0),
        ("18.4%", 0.184),
        ("18.4 %", 0.184),
        ("1,234", 1234.0),
        (" 42 ", 42.0),
        ("-3.5", -3.5),
        ("1e3", 1000.0),
        ("１８", 18.0),
    ],
)
def test_parse_number(value: object, expected: float) -> None:
    parsed = parse_number(value)
    assert parsed is not None
    assert math.isclose(parsed, expected, rel_tol=0, abs_tol=1e-15)


@pytest.mark.parametrize(
    "value", [True, False, None, float("nan"), float("inf"), "nan", "inf", "abc", "", "%",
              "12 apples", [1], {"a": 1}, 10**400])
def test_unparsable_numbers(value: object) -> None:
    assert parse_number(value) is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(), st.text(alphabet=st.characters(max_codepoint=127)),
                          st.sampled_from(["Straße", "ΣΊΣΥΦΟΣ ς", "ﬁne ½ ² ३", "İstanbul",
                                           "x\u0301y", "T-07 18.4% 2.6x", "3. .5 1.2.3"])),
                max_size=30))
def test_the_vectorised_normaliser_equals_the_one_normaliser(texts: list[str]) -> None:
    import polars as pl

    from grade_kit.text import normalize_column

    assert normalize_column(pl.Series(texts, dtype=pl.String)).to_list() == [
        normalize(t) for t in texts]


def test_brief_keeps_a_foreign_texts_first_line_and_says_what_it_left_out() -> None:
    assert brief("RuntimeError: no services\n\n  stderr: denied\nexit 1") == \
        "RuntimeError: no services … (+2 lines)"
    assert brief("one line") == "one line"
    assert brief("\n  padded  \n") == "padded"
    assert brief("") == "" and brief(" \n ") == ""
    # 10 words of 3 characters and 9 spaces = 39; cut between words, never within one:
    assert brief("abc " * 10, limit=19) == "abc abc abc abc abc … (+20 characters)"
    assert brief("abc " * 10, limit=18) == "abc abc abc abc … (+24 characters)"
    assert brief("x" * 25 + "\nmore", limit=10) == "x" * 10 + " … (+15 characters, +1 line)"


def test_brief_reads_a_repr_as_a_reader_would() -> None:
    """Issue 55, item 5: a message that went through repr shows no object address and no
    literal backslash-n."""
    assert brief("RetryError(<Future at 0x7f3a1c2b state=finished raised APIError>)") == \
        "RetryError(<Future state=finished raised APIError>)"
    assert brief("docker: pull failed\\nstderr: denied\\nexit 1") == \
        "docker: pull failed … (+2 lines)"
