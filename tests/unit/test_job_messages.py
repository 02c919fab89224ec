"""A write job's part messages (core/indexing/write_jobs.py): sized by the UTF-8 bytes of exactly what is
sent, non-ASCII text as itself, escaped only where SQS refuses a character; a part's errors bounded
whatever the request held."""

from __future__ import annotations

import json

import pytest

from core.indexing.write_jobs import (
    REPORTED_ID_CHARS,
    PartReport,
    bounded_error,
    encode_message,
    encoded_bytes,
    message_bytes,
    split_parts,
)


def test_accented_text_is_two_bytes_a_character_not_a_six_byte_escape() -> None:
    item = {"type": "document", "id": "d", "text": "é" * 1000}
    assert "é" * 1000 in encode_message(item)
    assert encoded_bytes(item) == len(json.dumps(item, separators=(",", ":"))) - 1000 * len("\\u00e9") + 2000
    assert message_bytes(item) == encoded_bytes(item) + 1


@pytest.mark.parametrize("char", ["\ud800", "\udfff", "\ufffe", "\uffff"])
def test_what_sqs_refuses_is_escaped_and_reads_back_the_same(char: str) -> None:
    message = {"title": f"a{char}b", "other": "ü\n\t"}
    text = encode_message(message)
    assert char not in text and text.encode()  # valid UTF-8, nothing SQS's character set excludes
    assert json.loads(text) == message


def test_parts_are_cut_by_encoded_bytes() -> None:
    items = [{"id": str(i), "text": "é" * 40_000} for i in range(10)]  # 80,000 bytes each, 240,000 escaped
    parts = list(split_parts(items, [1] * 10, 100, 200_000))
    assert [len(chunk) for _, chunk in parts] == [2, 2, 2, 2, 2]


def test_a_report_cuts_long_ids_texts_and_fields() -> None:
    error = {"index": 3, "entity_id": "x" * 100_000, "error": "m" * 10_000,
             "fields": {f"line.4.f{i}": "r" * 5000 for i in range(50)}}  # fmt: skip
    bounded = bounded_error(error)
    assert bounded["entity_id"] == "x" * REPORTED_ID_CHARS + "…" and bounded["index"] == 3
    assert len(json.dumps(bounded)) < 5_000
    report = PartReport(errors=[error] * 500).to_json()
    assert report["errors_total"] == 500 and len(json.dumps(report)) < 100_000
