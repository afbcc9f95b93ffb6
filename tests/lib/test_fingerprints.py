"""Prompt fingerprints (lib/fingerprints.py): cache-order rendering, hashes, divergence, span shapes."""

import yaml
from hypothesis import given, settings, strategies as st

from pipelines.lib import fingerprints


def chat(system: str, user: str) -> dict:
    return {"model": "gpt-4.1", "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}


def test_rendering_follows_cache_order_for_each_provider_shape():
    anthropic = {"system": [{"type": "text", "text": "SYS"}], "tools": [{"name": "b"}, {"name": "a"}],
                 "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    gemini = {"systemInstruction": {"parts": [{"text": "SYS"}]}, "contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    responses = {"instructions": "SYS", "input": "hi"}
    assert fingerprints.render(anthropic) == ("SYS", '[{"name":"b"},{"name":"a"}]', 'SYS[{"name":"b"},{"name":"a"}]hi')
    assert fingerprints.render(gemini)[2] == fingerprints.render(responses)[2] == fingerprints.render(chat("SYS", "hi"))[2] == "SYShi"


def test_openings_are_shared_exactly_as_far_as_the_texts_agree():
    system = "policy " * 300  # 2,100 characters
    a, b = fingerprints.fingerprint(chat(system, "one")), fingerprints.fingerprint(chat(system, "two"))
    assert a.opening_hashes[:4] == b.opening_hashes[:4]  # 256 .. 2,048 characters: inside the system prompt
    assert a.family == b.family and a.system_sha == b.system_sha and a.rendered_chars == 2103


def test_divergence_points_at_the_changing_value_and_describes_it_without_text():
    head, tail = "Rules: be kind. " * 75, " Answer briefly. " * 40
    before = head + "Now: 2026-11-08T10:00:01Z." + tail + "What is my order status?"
    after = head + "Now: 2026-11-08T10:15:42Z." + tail + "Where is my refund?"
    offset, span = fingerprints.divergence(before, after)
    assert offset == len(head) + len("Now: ")
    assert span == "digits and separators, 20 chars: looks like a timestamp"
    assert "2026" not in span
    assert fingerprints.divergence(before, before) == (len(before), "identical")


def test_span_guesses():
    assert fingerprints.describe_span("3f2a9c1e-1b2c-4d5e-8f90-123456789abc").endswith("a request id or hash")
    assert fingerprints.describe_span("Alice") == "letters, 5 chars: looks like a name or word"
    assert fingerprints.describe_span("42") == "digits, 2 chars: looks like a counter or number"


def test_real_cassette_pair_dropped_prefix_versus_stable_wire(shared):
    # pydantic-ai cassettes: the same follow-up sent twice; agui 0.1.10 drops the thinking block from the
    # re-sent conversation (..._drops_prefix) while the stable wire format keeps it (..._wire_stable)
    folder = shared / "data" / "pydantic_ai_cache_cassettes"

    def second_and_third(name):
        interactions = yaml.safe_load((folder / name).read_text())["interactions"]
        return [fingerprints.fingerprint(i["request"]["parsed_body"]) for i in interactions[1:3]]

    dropped = second_and_third("test_anthropic_thinking_agui_0_1_10_drops_prefix.yaml")
    stable = second_and_third("test_anthropic_thinking_roundtrip_wire_stable[vercel].yaml")
    assert stable[0].opening_hashes == stable[1].opening_hashes and stable[0].family == stable[1].family
    assert dropped[0].family != dropped[1].family and dropped[0].rendered_chars != dropped[1].rendered_chars


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab:0 ", max_size=60), st.text(alphabet="ab:0 ", max_size=60), st.text(alphabet="ab", max_size=40))
def test_common_prefix_and_realignment_match_their_definitions(head, tail_a, tail_b):
    # the fast forms (binary search over slices, a set of runs) against the plain definitions, on texts
    # built to share openings and runs
    from pipelines.lib.fingerprints import RESYNC_RUN, _realign, common_prefix_chars

    previous, current = head + tail_a, head + tail_b + tail_a
    naive_prefix = next((i for i, (x, y) in enumerate(zip(previous, current)) if x != y), min(len(previous), len(current)))
    assert common_prefix_chars(previous, current) == naive_prefix
    naive_realign = next((b for b in range(len(current) - RESYNC_RUN + 1) if current[b:b + RESYNC_RUN] in previous),
                         len(current))
    assert _realign(previous, current) == naive_realign


def test_an_inserted_timestamp_is_located_measured_and_named_exactly_inside_a_repetitive_prompt():
    from pipelines.lib.fingerprints import divergence

    prompt = "You are a helpful support assistant for Acme. " * 40
    offset, description = divergence(prompt, "Current time: 2026-11-20T10:02:02Z. " + prompt)
    assert offset == 0
    assert description == "digits, letters, spaces and separators, 34 chars: looks like a timestamp inside text"
