"""Helpers for adapter tests that run DynamoDB adapters under moto (in-process, no network)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import boto3
from moto import mock_aws

REGION = "us-east-1"


@contextmanager
def moto_dynamodb(monkeypatch) -> Iterator[object]:
    """A DynamoDB client on moto's in-process backend (endpoint overrides removed for the test)."""
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield boto3.client("dynamodb", region_name=REGION)


class OneRequestAtATime:
    """The moto client with each request made atomic, as DynamoDB itself is.

    moto's in-process backend is not thread-safe (two threads inside one TransactWriteItems corrupt its
    dicts); real DynamoDB executes each request atomically, so requests are serialised here — concurrent
    callers still interleave freely between requests, which is where their races live.
    """

    def __init__(self, client) -> None:
        self._client, self._lock = client, threading.Lock()

    def __getattr__(self, name):
        method = getattr(self._client, name)

        def call(*args, **kwargs):
            with self._lock:
                return method(*args, **kwargs)

        return call
