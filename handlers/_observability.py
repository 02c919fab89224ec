"""The shared Logger, Tracer and Metrics of every Quarry Lambda (Powertools)."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = "quarry"
NAMESPACE = "Quarry"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
