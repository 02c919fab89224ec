"""Write src/quarry_client/models.py from openapi.json (the server's document, `quarry openapi`) with
datamodel-code-generator: the client's models are generated from the server's schemas, never written by
hand. `make client-models` runs both steps; tests/test_generated_models.py checks a rerun changes nothing.

Every model allows fields it does not name (`--extra-fields allow`), whatever the schema's
`additionalProperties`: a server newer than the client may add fields to an answer, and an older client
must still read it (the unknown fields are kept on the model, in `model_extra`). Constrained types are
written `Annotated[int, Field(ge=...)]` / `Annotated[str, StringConstraints(...)]` instead of the
generator's `conint(...)` / `constr(...)` calls, which type checkers read as Any (the generator's own
`--field-constraints` wraps every optional constrained field in a RootModel instead).

Every model allows fields it does not name (`--extra-fields allow`), whatever the schema's
`additionalProperties`: a server newer than the client may add fields to an answer, and an older client
must still read it (the unknown fields are kept on the model, in `model_extra`).

    python generate_models.py [OUTPUT]
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCUMENT = HERE / "openapi.json"
MODELS = HERE / "src" / "quarry_client" / "models.py"
HEADER = "# Generated from clients/python/openapi.json by `make client-models` (datamodel-code-generator): do not edit."
OPTIONS = [
    "--input-file-type", "openapi",
    "--output-model-type", "pydantic_v2.BaseModel",
    "--target-python-version", "3.11",
    "--enum-field-as-literal", "all",
    "--output-datetime-class", "datetime",
    "--use-standard-collections",
    "--use-union-operator",
    "--use-double-quotes",
    "--extra-fields", "allow",
    "--extra-fields", "allow",
    "--disable-timestamp",
    "--formatters", "ruff-format",
    "--custom-file-header", HEADER,
]  # fmt: skip


def generate(output: Path) -> None:
    """Run the generator on DOCUMENT into `output` (through a file beside this one, so the formatter reads
    the same configuration wherever `output` is)."""
    tool = Path(sys.executable).parent / "datamodel-codegen"
    with tempfile.TemporaryDirectory(dir=HERE) as work:
        draft = Path(work) / "models.py"
        command = [str(tool), "--input", str(DOCUMENT), "--output", str(draft), *OPTIONS]
        subprocess.run(command, check=True, capture_output=True, text=True)
        draft.write_bytes(annotated(draft.read_bytes()))
        formatter = [str(Path(sys.executable).parent / "ruff"), "format", "--quiet", str(draft)]
        subprocess.run(formatter, check=True, capture_output=True, text=True)
        shutil.move(draft, output)


# pydantic's con* functions and what each becomes: the type and the constraint object taking its arguments
CONSTRAINED = {
    "conint": ("int", "Field"),
    "confloat": ("float", "Field"),
    "constr": ("str", "StringConstraints"),
}


def annotated(source: bytes) -> bytes:
    """The generated module with each `conint(...)`, `confloat(...)`, `constr(...)` call rewritten as an
    `Annotated[...]` type (the arguments unchanged), and the imports to match."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    calls = [node for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CONSTRAINED]  # fmt: skip
    for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset), reverse=True):
        begin = starts[call.lineno - 1] + call.col_offset
        end = starts[call.end_lineno - 1] + call.end_col_offset  # type: ignore[operator]
        kind, constraint = CONSTRAINED[call.func.id]  # type: ignore[attr-defined]
        arguments = source[begin + len(call.func.id) + 1 : end - 1]  # type: ignore[attr-defined]
        source = (
            source[:begin] + f"Annotated[{kind}, {constraint}(".encode() + arguments + b")]" + source[end:]
        )
    source = source.replace(
        b"from pydantic import BaseModel, ConfigDict, Field, RootModel, confloat, conint, constr\n",
        b"from pydantic import BaseModel, ConfigDict, Field, RootModel, StringConstraints\n",
    )
    return source.replace(b"from typing import Any,", b"from typing import Annotated, Any,", 1)


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else MODELS)
