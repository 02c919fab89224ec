"""Context assembly for LLM callers (docs/architecture.md, Context assembly; docs/conformance.md#packing):
sources, budgets, scoring, packing, knowledge-graph lines, explicit links and the learning cycle — pure
functions only.

The use cases that coordinate them with the ports live in `core/context/context_service.py`.
"""
