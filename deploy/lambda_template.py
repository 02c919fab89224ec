"""template.yaml as SAM reads it, resolved for running the functions on this machine (deploy/lambda_local.py).

The SAM translator (aws-sam-translator, what `sam build` and `sam deploy` run) turns the template into
plain CloudFormation: Globals merged into each function, each function's `Events` into an event source
mapping or a rule, the layer into a LayerVersion. `Stack` then resolves the intrinsic functions the
functions depend on (Ref, Fn::GetAtt, Fn::If and its conditions, Fn::Sub, Fn::Join) against the
parameters — the template's defaults, then `samconfig.toml`'s `parameter_overrides` for the command
(`sam local invoke` reads the same table), then the caller's — and the physical ids of the resources the
local backends created (deploy/lambda_backends.py). CloudFormation's behaviour for each intrinsic:
AWS CloudFormation User Guide, "Intrinsic function reference" and "Pseudo parameters reference".
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"
SAMCONFIG = ROOT / "samconfig.toml"
CACHE = ROOT / ".cache" / "lambda"
# moto's default account and the region the local backends run in (the functions see the same).
ACCOUNT_ID = "123456789012"
REGION = "us-east-1"
# `sam package` replaces the code and layer folders with S3 objects; the translator insists on S3 URIs.
PACKAGED_URI = "s3://quarry-artifacts/quarry.zip"
NO_VALUE = object()  # AWS::NoValue: the property is left out
_SUB = re.compile(r"\$\{([^}!]+)\}")


def parameter_overrides(command: str, config: Path = SAMCONFIG) -> dict[str, str]:
    """`parameter_overrides` of `[default.<command>.parameters]` in samconfig.toml (a "K=V K=V" string
    or a list of "K=V"), as `sam` reads them for that command (`local_invoke`, `local_start_api`)."""
    if not config.exists():
        return {}
    table = tomllib.loads(config.read_text()).get("default", {}).get(command, {}).get("parameters", {})
    raw = table.get("parameter_overrides", [])
    pairs = shlex.split(raw) if isinstance(raw, str) else list(raw)
    return dict(pair.split("=", 1) for pair in pairs)


def _translate(template: dict[str, Any], parameters: Mapping[str, str]) -> dict[str, Any]:
    import boto3
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator

    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Serverless::LayerVersion":
            resource["Properties"]["ContentUri"] = PACKAGED_URI
    template.setdefault("Globals", {}).setdefault("Function", {})["CodeUri"] = PACKAGED_URI
    translator = Translator(None, Parser(), boto_session=boto3.Session(region_name=REGION))
    # Offline: every role is explicit, so no managed-policy name needs looking up in IAM.
    return dict(
        translator.translate(template, parameter_values=dict(parameters), get_managed_policy_map=dict)
    )


def read_template(path: Path = TEMPLATE) -> dict[str, Any]:
    """The SAM template as plain data (CloudFormation's YAML tags read as {"Ref": ...} and the like)."""
    from cfnlint.decode import decode_str

    decoded, problems = decode_str(path.read_text())
    if problems:
        raise ValueError(f"{path.name}: {problems}")
    return dict(json.loads(json.dumps(decoded)))  # plain dicts, without cfn-lint's line-number nodes


def translated(source: dict[str, Any], parameters: Mapping[str, str]) -> dict[str, Any]:
    """The CloudFormation translation of `source`, cached by content (the translator takes seconds)."""
    from importlib.metadata import version

    text = json.dumps([source, dict(parameters), version("aws-sam-translator")], sort_keys=True)
    cached = CACHE / f"template-{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
    if cached.exists():
        return dict(json.loads(cached.read_text()))
    result = _translate(json.loads(json.dumps(source)), parameters)
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(result))
    return result


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """One function as Lambda would run it: handler, limits, environment and layers."""

    logical_id: str
    name: str
    handler: str
    runtime: str
    timeout: int
    memory: int
    environment: dict[str, str]
    layers: tuple[str, ...]  # logical ids of the SAM layers (AWS::Serverless::LayerVersion)


def _as_env(value: Any) -> str:
    """An environment value as CloudFormation passes it: strings as they are, lists joined with commas."""
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return value if isinstance(value, str) else json.dumps(value) if isinstance(value, dict) else str(value)


class Stack:
    """The translated template, its parameters, and the physical ids of the resources created so far."""

    def __init__(self, stack_name: str, overrides: Mapping[str, str] | None = None, path: Path = TEMPLATE):
        self.name = stack_name
        self.source = read_template(path)
        declared = self.source.get("Parameters", {})
        given = {k: str(v) for k, v in (overrides or {}).items()}
        unknown = sorted(set(given) - set(declared))
        if unknown:
            raise ValueError(f"unknown template parameters: {', '.join(unknown)}")
        missing = sorted(k for k, p in declared.items() if "Default" not in p and k not in given)
        if missing:
            raise ValueError(f"template parameters without a default need a value: {', '.join(missing)}")
        self.template = translated(self.source, given)
        self.parameters: dict[str, Any] = {}
        for key, spec in declared.items():
            value = given.get(key, spec.get("Default", ""))
            if spec["Type"] == "CommaDelimitedList":
                value = [v.strip() for v in str(value).split(",")] if not isinstance(value, list) else value
            self.parameters[key] = value
        self.refs: dict[str, Any] = {
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT_ID,
            "AWS::StackName": stack_name,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
        }
        self.attributes: dict[tuple[str, str], Any] = {}

    # ---------------------------------------------------------------- resources
    def resources(self, kind: str) -> dict[str, dict[str, Any]]:
        """Translated resources of one type whose Condition holds: {logical id: resource}."""
        found = self.template["Resources"].items()
        return {k: r for k, r in found if r["Type"] == kind and self.condition(r.get("Condition"))}

    def properties(self, logical_id: str) -> dict[str, Any]:
        """A resource's properties with every intrinsic resolved."""
        return dict(self.resolve(self.template["Resources"][logical_id].get("Properties", {})))

    def bind(self, logical_id: str, ref: Any, **attributes: Any) -> None:
        """Record a created resource's physical id (its Ref) and attributes (its GetAtt values)."""
        self.refs[logical_id] = ref
        for name, value in attributes.items():
            self.attributes[(logical_id, name)] = value

    def layer_source(self, logical_id: str) -> str:
        """The SAM layer a translated LayerVersion comes from (the translator suffixes a content hash)."""
        layers = [
            k for k, r in self.source["Resources"].items() if r["Type"] == "AWS::Serverless::LayerVersion"
        ]
        return next(name for name in layers if logical_id.startswith(name))

    def function(self, logical_id: str) -> FunctionSpec:
        """The function as configured, its Condition ignored (`sam local invoke` runs any function)."""
        resource = self.template["Resources"].get(logical_id)
        if resource is None or resource["Type"] != "AWS::Lambda::Function":
            known = ", ".join(self.function_ids())
            raise KeyError(f"no function {logical_id!r} in template.yaml (functions: {known})")
        wanted = ("Handler", "Runtime", "Timeout", "MemorySize", "Environment", "Layers")
        props = self.resolve({k: v for k, v in resource["Properties"].items() if k in wanted})
        variables = (props.get("Environment") or {}).get("Variables") or {}
        layers = tuple(self.layer_source(str(ref)) for ref in props.get("Layers") or [])
        return FunctionSpec(
            logical_id=logical_id,
            name=f"{self.name}-{logical_id}",
            handler=props["Handler"],
            runtime=props["Runtime"],
            timeout=int(props.get("Timeout", 3)),
            memory=int(props.get("MemorySize", 128)),
            environment={k: _as_env(v) for k, v in variables.items()},
            layers=layers,
        )

    def function_ids(self) -> list[str]:
        found = self.template["Resources"].items()
        return sorted(k for k, r in found if r["Type"] == "AWS::Lambda::Function")

    # ---------------------------------------------------------------- intrinsics
    def condition(self, name: str | None) -> bool:
        if name is None:
            return True
        return bool(self.resolve(self.template.get("Conditions", {})[name]))

    def ref(self, name: str) -> Any:
        if name in self.parameters:
            return self.parameters[name]
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in self.refs:
            return self.refs[name]
        resource = self.template["Resources"].get(name, {})
        if resource.get("Type") == "AWS::Lambda::LayerVersion":
            return name
        if resource.get("Type") == "AWS::Lambda::Function":
            return f"{self.name}-{name}"
        raise KeyError(f"Ref {name}: the resource was not created locally")

    def get_att(self, name: str, attribute: str) -> Any:
        if (name, attribute) in self.attributes:
            return self.attributes[(name, attribute)]
        if (
            attribute == "Arn"
            and self.template["Resources"].get(name, {}).get("Type") == "AWS::Lambda::Function"
        ):
            return f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{self.name}-{name}"
        raise KeyError(f"Fn::GetAtt {name}.{attribute}: the resource was not created locally")

    def sub(self, arg: Any) -> str:
        text, names = (arg, {}) if isinstance(arg, str) else (arg[0], self.resolve(arg[1]))

        def value(match: re.Match[str]) -> str:
            key = match.group(1)
            if key in names:
                return str(names[key])
            if "." in key and key.split(".", 1)[0] not in self.parameters:
                return str(self.get_att(*key.split(".", 1)))
            return str(self.ref(key))

        return _SUB.sub(value, text)

    def _function(self, key: str, arg: Any) -> Any:
        intrinsics = {
            "Ref": lambda: self.ref(arg),
            "Fn::GetAtt": lambda: self.get_att(*(arg if isinstance(arg, list) else arg.split(".", 1))),
            "Fn::If": lambda: self.resolve(arg[1] if self.condition(arg[0]) else arg[2]),
            "Fn::Sub": lambda: self.sub(arg),
            "Fn::Join": lambda: str(arg[0]).join(str(v) for v in self.resolve(arg[1])),
            "Fn::Equals": lambda: len({json.dumps(v, sort_keys=True) for v in self.resolve(arg)}) == 1,
            "Fn::Not": lambda: not self.resolve(arg[0]),
            "Fn::And": lambda: all(self.resolve(arg)),
            "Fn::Or": lambda: any(self.resolve(arg)),
            "Condition": lambda: self.condition(arg),
        }
        return intrinsics[key]() if key in intrinsics else {key: self.resolve(arg)}

    def resolve(self, value: Any) -> Any:
        """`value` with every intrinsic function replaced by its value (AWS::NoValue drops the item)."""
        if isinstance(value, list):
            return [v for v in (self.resolve(item) for item in value) if v is not NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref" or key.startswith("Fn::") or key == "Condition":
                return self._function(key, arg)
        resolved = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not NO_VALUE}
