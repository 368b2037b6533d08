"""The service's OpenAPI contract: every operation, its id, tags, parameters, bodies and answers, as recorded.

``openapi_surface.json`` holds :func:`surface` of the schema the service published when its routes were
one module (before issue 19's split). A change of the contract is deliberate: rewrite the file with
``python -c "import json; from tests.api.test_openapi import current; print(json.dumps(current(), indent=1))"``.
"""

import json
import tempfile
from pathlib import Path
from typing import Any

from iosets.api import Settings, create_app

RECORDED = Path(__file__).with_name("openapi_surface.json")


def _content(content: dict[str, Any]) -> dict[str, Any]:
    """Media type -> the schema's reference (a component's name) or the schema itself when inline and small."""
    shown = {}
    for media, body in sorted(content.items()):
        schema = body.get("schema", {})
        shown[media] = schema["$ref"].rsplit("/", 1)[-1] if "$ref" in schema else schema
    return shown


def surface(schema: dict[str, Any]) -> dict[str, Any]:
    """``"METHOD path"`` -> operation id, tags, parameters, request body and answers; plus the components' names."""
    operations = {}
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            body = operation.get("requestBody", {}).get("content", {})
            operations[f"{method.upper()} {path}"] = {
                "operationId": operation["operationId"],
                "tags": operation.get("tags", []),
                "parameters": [[p["in"], p["name"], p.get("required", False)] for p in operation.get("parameters", [])],
                "requestBody": {media: sorted(part.get("schema", {})) for media, part in sorted(body.items())},
                "security": operation.get("security", []),
                "responses": {
                    code: _content(answer.get("content", {})) for code, answer in operation["responses"].items()
                },
            }
    components = schema.get("components", {})
    return {
        "operations": dict(sorted(operations.items())),
        "schemas": sorted(components.get("schemas", {})),
        "securitySchemes": components.get("securitySchemes", {}),
    }


def current() -> dict[str, Any]:
    """The surface of the schema a service publishes now (its store a temporary SQLite file)."""
    with tempfile.TemporaryDirectory(prefix="iosets-openapi-") as folder:
        app = create_app(Settings(data_dir=folder))
        try:
            return surface(app.openapi())
        finally:
            app.state.service.store.close()


def test_the_openapi_contract_is_the_recorded_one():
    recorded = json.loads(RECORDED.read_text())
    now = current()
    assert sorted(now["operations"]) == sorted(recorded["operations"])  # the (method, path) pairs first
    for name, operation in recorded["operations"].items():
        assert now["operations"][name] == operation, name
    assert now == recorded


def test_each_operation_answers_its_recorded_model():
    answers = {name: op["responses"]["200"] for name, op in current()["operations"].items()}
    json_models = {name: media.get("application/json") for name, media in answers.items()}
    assert json_models == {
        "GET /healthz": "Status",
        "GET /metrics": None,
        "GET /readyz": "Readiness",
        "GET /v1/apps/{app}": "AppSummary",
        "GET /v1/jobs": "JobPage",
        "GET /v1/jobs/{job_id}": "Job",
        "GET /v1/policy": "Policy",
        "GET /v1/policy/export": {"type": "object"},
        "GET /v1/policy/versions": "PolicyVersions",
        "GET /v1/recommendation": "Recommendation",
        "GET /v1/report": None,
        "POST /v1/jobs": "Job",
        "POST /v1/recommendations": "Recommendations",
        "PUT /v1/policy": "Policy",
    }
