"""``fingerprints.loads``: json.loads' value of a line (orjson where that is the same), or json.loads' error.

The body path reads every logged request a fast-lane line carries with it (``body_chunks.fingerprint_piece``), and
what it reads becomes hashes and offsets that must not change with the reader: the rendered prompt takes the
messages' strings, the tools' canonical JSON takes every number and key as json.loads gives them. orjson differs
from json.loads in what it reads as a float (an integer beyond 64 bits: measured below) and in what it refuses
(NaN, Infinity, 1e400, lone surrogate escapes, deep nesting), so each case is held to json.loads' answer here.
"""

import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from pipelines.ingest import fingerprints

needs_compiled = pytest.mark.skipif(fingerprints.compiled is None, reason="the C helpers were not built")


def typed(value):
    """A value's exact shape: types (1, 1.0 and True differ), key order, float bits (-0.0 and nan included)."""
    if isinstance(value, dict):
        return ("object", [(key, typed(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("array", [typed(item) for item in value])
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value.hex())
    return (type(value).__name__, value)


def outcome(read, text):
    try:
        return typed(read(text))
    except (ValueError, RecursionError) as error:
        return ("error", type(error).__name__)


def same_as_json(text):
    assert outcome(fingerprints.loads, text) == outcome(json.loads, text), text[:200]


# integers around the 64-bit limits (orjson's own range) and far beyond; every float json.dumps writes
integers = st.one_of(st.integers(), st.integers(-2**64 - 5, -2**63 + 5), st.integers(2**63 - 5, 2**64 + 5),
                     st.integers(-10**40, 10**40))
scalars = st.one_of(st.none(), st.booleans(), integers, st.floats(allow_nan=True, allow_infinity=True),
                    st.text(alphabet=st.characters(codec=None, categories=None), max_size=20),
                    st.text(alphabet="a\"\\/\b\f\n\r\tÿΩ😀\ud800\udfff\x00\x1f\x7f", max_size=12))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=5),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=5)),
                      max_leaves=30)


@needs_compiled
@settings(max_examples=600, deadline=None)
@given(values, st.booleans(), st.booleans())
def test_any_value_json_writes_reads_back_as_json_loads_reads_it(value, ascii_only, spaced):
    text = json.dumps(value, ensure_ascii=ascii_only, separators=(", ", ": ") if spaced else (",", ":"))
    same_as_json(text)
    same_as_json('{"tenant": "t", "request": ' + text + ', "response": {}}')


# numbers as a log may write them: up to 18 digits either side of the point, any exponent json reads
numbers = st.from_regex(r"\A-?(0|[1-9][0-9]{0,17})(\.[0-9]{1,18})?([eE][+-]?[0-9]{1,3})?\Z")


@needs_compiled
@settings(max_examples=800, deadline=None)
@given(numbers)
def test_every_written_number_reads_to_the_same_int_or_float_bits(number):
    same_as_json(number)
    same_as_json('{"minimum": ' + number + "}")


@needs_compiled
@pytest.mark.parametrize("text", [
    # orjson reads these integers as floats (measured: 18446744073709551616 -> 1.8446744073709552e+19)
    "18446744073709551616", "-9223372036854775809", "123456789012345678901234567890",
    '{"max_tokens": 100000000000000000000}',
    # the limits themselves, which orjson keeps whole
    "18446744073709551615", "-9223372036854775808", "9223372036854775807",
    # what orjson refuses and json.loads reads
    "NaN", "[Infinity, -Infinity]", "1e400", "-1e400", '"\\ud800"', '{"a": "x\\udfff"}', "[" * 1100 + "]" * 1100,
    # hard roundings (the smallest normal's neighbour, the largest double and past it, the smallest subnormal)
    "2.2250738585072011e-308", "1.7976931348623157e308", "1.7976931348623159e308", "4.9e-324",
    "2.4703282292062328e-324",
    "0.30000000000000004", "9007199254740993", "-0.0", "1E5", "1e-400",
    # a repeated key: the last one wins in both
    '{"a": 1, "a": 2, "b": {"c": 1, "c": [2]}}',
    # what both refuse: each gives json.loads' own error
    "", "{", '{"a": 1,}', "[1 2]", "01", "1.", '"\x01"', "nul", '{"a": 1} x', "\ufeff{}",
    # a digit run of 19 inside a string: read by json.loads, the same value
    '{"id": "1234567890123456789", "n": 1.5}',
])
def test_the_cases_where_orjson_and_json_differ_read_as_json_does(text):
    same_as_json(text)


def test_orjson_alone_would_read_a_long_integer_as_a_float():
    """Why the digit scan: without it the tools' canonical JSON of ``{"max": 10**20}`` would change."""
    import orjson

    assert orjson.loads("100000000000000000000") == 1e20 and isinstance(orjson.loads("100000000000000000000"), float)
    assert fingerprints.loads("100000000000000000000") == 10**20
    assert fingerprints.canonical_json(fingerprints.loads('{"max": 100000000000000000000}')) == \
        '{"max":100000000000000000000}'


@needs_compiled
@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="0123456789a٣𝟘 \ud800", max_size=60), st.integers(-1, 25))
def test_digit_run_matches_its_definition(text, run):
    """ASCII digits only (orjson reads no other script's digits as a number), at every storage width."""
    assert fingerprints.compiled.digit_run(text, run) == fingerprints.digit_run_reference(text, run)
    assert fingerprints.compiled.digit_run("Ω" + text, run) == fingerprints.digit_run_reference("Ω" + text, run)
    assert fingerprints.compiled.digit_run("😀" + text, run) == fingerprints.digit_run_reference("😀" + text, run)


@needs_compiled
def test_digit_run_finds_a_run_at_every_place_and_length_around_the_looked_at_indices():
    """The scan looks at every ``run``-th character only: a run of any length, anywhere, is still found or not."""
    for run in range(1, 7):
        for width in ("x", "Ω", "😀"):
            for length in range(0, 3 * run):
                for start in range(0, 3 * run):
                    text = width * start + "7" * length + width * 3
                    assert fingerprints.compiled.digit_run(text, run) == (length >= run), (run, width, length, start)
