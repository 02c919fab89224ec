"""quarry-client: a typed client for Quarry's HTTP API, sync (`Quarry`) and async (`AsyncQuarry`).

Models are generated from the server's OpenAPI document (`quarry_client.models`, see clients/python/README
and the repository's docs/clients.md); LangChain and LlamaIndex retrievers live in
`quarry_client.langchain` and `quarry_client.llama_index` (the `langchain` / `llamaindex` extras).
"""

from quarry_client import models
from quarry_client._async import AsyncQuarry, AsyncWrite
from quarry_client._errors import (
    APIConnectionError,
    APIError,
    AuthenticationError,
    BadRequestError,
    BulkWriteError,
    ConflictError,
    InternalServerError,
    MethodNotAllowedError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    QuarryError,
    RateLimitError,
    ResponseError,
    TenantErasedError,
    UnavailableError,
    UnsupportedMediaTypeError,
    WaitTimeoutError,
)
from quarry_client._retry import NO_RETRIES, RetryPolicy
from quarry_client._sync import Quarry, Write

__all__ = [
    "APIConnectionError",
    "APIError",
    "AsyncQuarry",
    "AsyncWrite",
    "AuthenticationError",
    "BadRequestError",
    "BulkWriteError",
    "ConflictError",
    "InternalServerError",
    "MethodNotAllowedError",
    "NO_RETRIES",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "Quarry",
    "QuarryError",
    "RateLimitError",
    "ResponseError",
    "TenantErasedError",
    "RetryPolicy",
    "UnavailableError",
    "UnsupportedMediaTypeError",
    "WaitTimeoutError",
    "Write",
    "models",
]
