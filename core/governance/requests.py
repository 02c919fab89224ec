"""Requests and reports of governed retrieval: POST /retrieve and corpus loading (POST /corpus)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    ConfigDict,
    Field,
    StrictBool,
    StringConstraints,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from core.base_model import JsonFloat, QuarryModel
from core.governance.overlay import MAX_TEXT_CHARS, ROLE_ID_PATTERN, RoleOverlay, SourceName
from core.indexing.entity_validation import NONBLANK_PATTERN, WHITESPACE_CLASS, at_least_one

MAX_CORPUS_DOCUMENTS = 500  # one request; larger corpora go through `quarry load-corpus` in batches
MAX_PREMADE_CHUNKS = 1000  # per document
TRUST_LEVEL_PATTERN = (  # `_trust`: high, medium or low once stripped and lower-cased
    f"^{WHITESPACE_CLASS}*([Hh][Ii][Gg][Hh]|[Mm][Ee][Dd][Ii][Uu][Mm]|[Ll][Oo][Ww]){WHITESPACE_CLASS}*$"
)
MAX_CHUNK_CHARS = 20_000  # a pre-made chunk is a passage (~300 tokens is ~1200 characters)

RoleId = Annotated[str, StringConstraints(pattern=ROLE_ID_PATTERN)]


class RetrieveRequest(QuarryModel):
    """POST /retrieve: a task for a role, governed by the given overlay or the one stored for the role."""

    model_config = ConfigDict(extra="forbid")

    role_id: RoleId
    task_text: Annotated[
        str,
        StringConstraints(
            strip_whitespace=True, min_length=1, max_length=MAX_TEXT_CHARS, pattern=NONBLANK_PATTERN
        ),
    ]
    overlay: RoleOverlay | None = Field(
        default=None,
        description="Use this overlay instead of the one stored for role_id; `null`: no overlay at all, "
        "the shared corpus only (role-overlay-retrieval-api); absent: the stored one",
    )
    context_summary: Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS)] | None = None
    lexical_only: StrictBool = Field(default=False, description="BM25 only: no embedder is called")

    @property
    def shared_corpus_only(self) -> bool:
        """True when the request sent `overlay: null`: governed by no overlay, not by the stored one."""
        return "overlay" in self.model_fields_set and self.overlay is None

    @model_validator(mode="after")
    def _same_role(self) -> RetrieveRequest:
        if self.overlay is not None and self.overlay.role_id != self.role_id:
            raise ValueError(f"overlay.role_id '{self.overlay.role_id}' must equal role_id '{self.role_id}'")
        return self


class CorpusChunk(QuarryModel):
    """A pre-made chunk given as an object."""

    model_config = ConfigDict(extra="allow")

    text: Annotated[str, StringConstraints(min_length=1, max_length=MAX_CHUNK_CHARS)]


class CorpusDocument(QuarryModel):
    """One corpus document: `text` (chunked by Quarry) or `chunks` (used as they are); extra fields kept."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra=at_least_one(  # what `_has_content` checks, stated
            [
                {
                    "required": ["text"],
                    "properties": {"text": {"type": "string", "pattern": NONBLANK_PATTERN}},
                },
                {"required": ["chunks"], "properties": {"chunks": {"type": "array"}}},
            ]
        ),
    )

    id: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    title: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=1, max_length=1000, pattern=NONBLANK_PATTERN)
    ]
    text: str | None = None
    chunks: (
        list[CorpusChunk | Annotated[str, StringConstraints(min_length=1, max_length=MAX_CHUNK_CHARS)]] | None
    ) = Field(default=None, min_length=1, max_length=MAX_PREMADE_CHUNKS)
    source: SourceName | None = None
    trust: Annotated[
        str | JsonFloat | None,
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "string", "pattern": TRUST_LEVEL_PATTERN},
                    {"type": "number", "minimum": 0, "maximum": 1},
                    {"type": "null"},
                ],
                "description": "high, medium or low (any case), or a number from 0 to 1",
            }
        ),
    ] = None
    created_at: str | None = None

    @field_validator("trust")
    @classmethod
    def _trust(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() not in ("high", "medium", "low"):
            raise ValueError("must be high, medium, low or a number between 0 and 1")
        if isinstance(value, float) and not 0.0 <= value <= 1.0:
            raise ValueError("must be high, medium, low or a number between 0 and 1")
        return value.strip().lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _has_content(self) -> CorpusDocument:
        if not (self.text and self.text.strip()) and not self.chunks:
            raise ValueError("needs `text` or `chunks`")
        return self

    def entity(self) -> dict[str, Any]:
        """The document as a bulk indexing item (`type: document`), pre-made chunks as plain strings."""
        body = self.model_dump(exclude_none=True)
        if self.chunks is not None:
            body["chunks"] = [c.text if isinstance(c, CorpusChunk) else c for c in self.chunks]
        return {"type": "document", **body}


class CorpusError(QuarryModel):
    """Why one document was not ingested."""

    index: int
    id: str | None
    error: str
    fields: dict[str, str] = Field(default_factory=dict)


class CorpusReport(QuarryModel):
    """What loading a corpus did."""

    documents_ingested: int
    chunks_ingested: int
    errors: list[CorpusError]
    unindexed_fields: list[str] = Field(
        default_factory=list,
        description="Fields of the documents no search will find (a document neither searches nor filters on them): stored, returned",
    )
