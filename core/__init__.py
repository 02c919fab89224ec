"""Quarry's pure engine: parsing, fusion, scoring, packing, learning, and the use cases over ports."""
