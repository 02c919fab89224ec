"""The MCP server (`quarry mcp`, started by handlers/cli/mcp_command.py): the search tool, the governance tool and
resources (server.py), the context tools (context.py), the entity tools (entities.py), the arguments they
share (arguments.py), each entity type's fields (fields.py), the published schemas and their checks
(tools.py) and the streamable HTTP transport (http.py). Local only: none of it ships in the Lambda
artifact (deploy/lambda_artifact.py)."""
