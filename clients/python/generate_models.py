"""Write src/quarry_client/models.py from openapi.json (the server's document, `quarry openapi`) with
datamodel-code-generator: the client's models are generated from the server's schemas, never written by
hand. `make client-models` runs both steps; tests/test_generated_models.py checks a rerun changes nothing.

Every model allows fields it does not name (`--extra-fields allow`), whatever the schema's
`additionalProperties`: a server newer than the client may add fields to an answer, and an older client
must still read it (the unknown fields are kept on the model, in `model_extra`).

    python generate_models.py [OUTPUT]
"""

from __future__ import annotations

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
        shutil.move(draft, output)


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else MODELS)
