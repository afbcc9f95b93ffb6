"""The body path's compiled helpers (pipelines/ingest/_divergence.c) against their Python definitions.

``fingerprints.py`` keeps each definition in Python (``*_reference``) and uses the compiled one where the
install built it; the two must answer alike on every text: one-byte, two-byte and four-byte strings (CPython
stores each width differently), lone surrogates (json.loads makes them from ``\\ud800``), and texts that share
openings and runs, where the answers are not trivial.
"""

import json
import shutil
import sysconfig

import pytest
from hypothesis import given, settings, strategies as st

from pipelines.ingest import fingerprints

compiled = fingerprints.compiled
needs_compiled = pytest.mark.skipif(compiled is None, reason="the C helpers were not built (no C compiler)")

# a few characters of each storage width, spaces and boundary characters, digits of other scripts
ALPHABET = "ab:0 \t\n\"'(){}<>,;=Tz" + "éÿ" + "Ωд٣⁵\u2028\u3000" + "𝟘😀" + "\ud800"
texts = st.text(alphabet=ALPHABET, max_size=80)


def test_the_compiled_helpers_are_built_where_a_compiler_is():
    """An install on a machine with a C compiler and Python's headers builds the module (hatch_build.py)."""
    has_headers = (sysconfig.get_paths()["include"] and
                   __import__("pathlib").Path(sysconfig.get_paths()["include"], "Python.h").exists())
    if shutil.which(sysconfig.get_config_var("CC").split()[0] if sysconfig.get_config_var("CC") else "cc") is None \
            or not has_headers:
        pytest.skip("no C compiler or no Python headers on this machine: the Python definitions serve")
    assert compiled is not None
    assert fingerprints.common_prefix_chars is compiled.common_prefix
    assert fingerprints.member_span is compiled.member_span


@needs_compiled
@settings(max_examples=500, deadline=None)
@given(texts, texts, texts)
def test_common_prefix_matches_its_definition(head, tail_a, tail_b):
    previous, current = head + tail_a, head + tail_b
    assert compiled.common_prefix(previous, current) == fingerprints.common_prefix_chars_reference(previous, current)
    # a long shared opening, compared in blocks, with the difference at any width
    long_head = head * 40
    assert compiled.common_prefix(long_head + tail_a, long_head + tail_b) == \
        fingerprints.common_prefix_chars_reference(long_head + tail_a, long_head + tail_b)


@needs_compiled
@settings(max_examples=500, deadline=None)
@given(texts, texts, texts, st.sampled_from(["", "x" * 16, "Ω" * 20, "😀" * 17]))
def test_realign_matches_its_definition(head, tail_a, tail_b, shared_run):
    # texts built to share runs of RESYNC_RUN characters at various places, or none
    previous, current = head + shared_run + tail_a, tail_b + shared_run + head
    assert compiled.realign(previous, current) == fingerprints.realign_reference(previous, current)
    assert compiled.realign(current, previous) == fingerprints.realign_reference(current, previous)


def test_realign_on_repeated_text_and_at_the_window_length():
    run = "a" * 512
    assert compiled is None or compiled.realign(run, "b" * 20 + run) == 20
    assert compiled is None or compiled.realign("ab" * 256, "ba" * 256) == 0
    with pytest.raises(ValueError) if compiled else pytest.raises(TypeError):
        (compiled.realign if compiled else len)("x" * 2000, "x")


@needs_compiled
@settings(max_examples=500, deadline=None)
@given(texts, st.data())
def test_widen_matches_its_definition(text, data):
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text) + 3))
    assert compiled.widen(text, start, end) == fingerprints.widen_reference(text, start, end)


@needs_compiled
@settings(max_examples=500, deadline=None)
@given(texts)
def test_span_facts_match_str_own_character_tests(span):
    assert compiled.span_facts(span) == fingerprints.span_facts_reference(span)


@needs_compiled
def test_span_facts_of_each_ascii_character_and_its_neighbours_match_str_own_tests():
    """The compiled facts look ASCII characters up in a table made at import: each of the 128, alone and beside the
    first characters past it, gets str's answers."""
    for code in range(128):
        for span in (chr(code), chr(code) * 3 + "a", chr(code) + "\x80", chr(code) + "\u00e9", chr(code) + "\u0663"):
            assert compiled.span_facts(span) == fingerprints.span_facts_reference(span), (code, span)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(["tools", "a", "b\"", "k"]), children, max_size=4),
    max_leaves=12,
)


@needs_compiled
@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["request", "tools", "x", "é", "re\\\"q"]), json_values), max_size=6),
       st.sampled_from([(",", ":"), (", ", ": "), (" ,\n", " :\t")]), st.booleans(), st.text(" \t\n\r", max_size=2))
def test_member_span_finds_what_the_walk_finds(members, separators, ascii_only, padding):
    """Objects written with every spacing, escaped or raw text, members given twice, nested quotes."""
    item, colon = separators
    line = padding + "{" + item.join(
        json.dumps(k, ensure_ascii=ascii_only) + colon + json.dumps(v, ensure_ascii=ascii_only) for k, v in members
    ) + "}" + padding
    escaped_name = any("\\" in json.dumps(k, ensure_ascii=ascii_only) for k, _ in members)
    for key in ("request", "tools", "x", "é", "absent"):
        try:
            found = compiled.member_span(line, 0, key)
        except ValueError:  # only where a name is written with an escape: the caller walks the line then
            assert escaped_name
            continue
        assert found == fingerprints.member_span_reference(line, 0, key)
        if found is not None:  # the span is the text of the value json.loads keeps
            assert json.loads(line[slice(*found)]) == json.loads(line)[key]


def test_out_of_range_offsets_are_answered_or_refused_never_read_outside_the_text():
    """A negative start of member_span counts from 0, as the reference's regex does (it once read memory before
    the text, and crashed on a large one); widen refuses what divergence never passes."""
    assert fingerprints.member_span('{"a":1}', -10**7, "a") == fingerprints.member_span_reference('{"a":1}', -10**7, "a") \
        == (5, 6)
    if compiled:
        for start, end in ((-2, 1), (1, -2), (9, 9)):
            with pytest.raises(ValueError):
                compiled.widen("abc def", start, end)


def test_member_span_leaves_escaped_names_and_non_objects_to_the_walk():
    line = '{"\\u0074ools": [1], "a": 2}'
    assert fingerprints.member_span_reference(line, 0, "tools") == (15, 18)
    if compiled:
        with pytest.raises(ValueError):
            compiled.member_span(line, 0, "tools")
        with pytest.raises(ValueError):
            compiled.member_span("[1, 2]", 0, "tools")
        assert compiled.member_span('{"a": "x\\\\", "tools": {"b": "}"}}', 0, "tools") == (22, 32)


@needs_compiled
@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300), st.data())
def test_block_lines_counts_as_numpy_does(data, draw):
    """stage.count_lines' per-block facts (newlines, the first one's offset, a vertical tab or form feed), on any bytes
    and any prefix of the buffer (the count reads a reused buffer, its last block only part full)."""
    from pipelines.ingest import stage

    if draw.draw(st.booleans()):  # mostly the bytes that matter
        data = b"".join(draw.draw(st.lists(st.sampled_from([b"\n", b"\x0b", b"\x0c", b"\r", b"a", b"{"]), max_size=40)))
    buffer = bytearray(data + b"\n\x0b")  # past the size: never counted
    size = draw.draw(st.integers(0, len(data)))
    assert compiled.block_lines(buffer, size) == stage.block_lines_reference(buffer, size)
    assert compiled.block_lines(memoryview(buffer), size) == stage.block_lines_reference(buffer, size)


@needs_compiled
def test_block_lines_refuses_a_size_outside_its_buffer():
    with pytest.raises(ValueError):
        compiled.block_lines(bytearray(b"ab"), 3)
    with pytest.raises(ValueError):
        compiled.block_lines(bytearray(b"ab"), -1)
