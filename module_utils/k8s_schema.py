"""Offline, strict validation of Kubernetes manifests and Helm values documents.

Pure functions, shared by the ``k8s_manifest_validate`` module, the ``k8s`` filters and the unit tests.

* Custom resources are checked against the ``openAPIV3Schema`` of the CRDs found in a set of
  files and directories (``files/crds/<component>/<version>/`` in this project, gzip-compressed
  upstream files), converted to a strict JSON Schema: fields that the
  schema does not list are rejected unless the schema says ``x-kubernetes-preserve-unknown-fields``.
* Core kinds are checked with ``kubernetes-validate`` in its strict mode.
* Nulls are dropped before validation, as the API server prunes them.

* With a ``k8s_cel.CelRules`` evaluator, the CEL rules (``x-kubernetes-validations``) of the CRD
  run too (transition rules are skipped, rules the evaluator cannot run are reported as unevaluable).

Admission webhooks are not run; ``k8s_gang`` holds the gang checks that only a webhook makes.
"""

import copy
import gzip
import importlib.util
import os

from ansible.module_utils.k8s_cel import collect_rules

try:
    import yaml

    _Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    HAS_YAML = True
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    HAS_YAML = False

# jsonschema and kubernetes-validate are imported where they are used: the k8s filters load this
# file in every Ansible worker process, and importing them there cost about 0.3 s of CPU per task.
HAS_JSONSCHEMA = importlib.util.find_spec("jsonschema") is not None
HAS_KUBERNETES_VALIDATE = importlib.util.find_spec("kubernetes_validate") is not None

# ObjectMeta fields a client may send; anything else under metadata is a mistake.
_METADATA_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string"},
        "generateName": {"type": "string"},
        "namespace": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "ownerReferences": {"type": "array", "items": {"type": "object"}},
        "uid": {"type": "string"},
        "resourceVersion": {"type": "string"},
        "generation": {"type": "integer"},
        "creationTimestamp": {"type": ["string", "null"]},
        "deletionTimestamp": {"type": ["string", "null"]},
        "deletionGracePeriodSeconds": {"type": "integer"},
        "managedFields": {"type": "array"},
        "selfLink": {"type": "string"},
    },
}


class CrdRegistry:
    """Strict JSON Schemas of custom resources, keyed by (group, version, kind)."""

    def __init__(self):
        self.schemas = {}
        self.served = {}  # (group, kind) -> sorted list of served versions
        self.sources = {}  # (group, kind) -> file the CRD came from
        self.rules = {}  # (group, version, kind) -> CEL rules (k8s_cel.collect_rules)

    def groups(self):
        return {group for group, _kind in self.served}

    def add_crd(self, crd, source="<data>", strict=True):
        """Register every served version of one CustomResourceDefinition document."""
        spec = crd.get("spec") or {}
        group = spec.get("group")
        kind = (spec.get("names") or {}).get("kind")
        if not group or not kind:
            raise ValueError(f"{source}: CustomResourceDefinition without spec.group or spec.names.kind")
        served = []
        for version in spec.get("versions") or []:
            if not version.get("served", True):
                continue
            schema = ((version.get("schema") or {}).get("openAPIV3Schema")) or {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
            }
            served.append(version["name"])
            self.schemas[(group, version["name"], kind)] = crd_to_json_schema(schema, strict=strict)
            self.rules[(group, version["name"], kind)] = collect_rules(schema)
        self.served[(group, kind)] = sorted(served)
        self.sources[(group, kind)] = source

    def lookup(self, api_version, kind):
        group, _sep, version = api_version.rpartition("/")
        return self.schemas.get((group, version, kind))

    def lookup_rules(self, api_version, kind):
        group, _sep, version = api_version.rpartition("/")
        return self.rules.get((group, version, kind), [])


def load_yaml_documents(text, source="<string>"):
    """Parse a multi-document YAML string; empty documents are skipped."""
    if not HAS_YAML:  # pragma: no cover
        raise RuntimeError("PyYAML is required")
    try:
        return [doc for doc in yaml.load_all(text, Loader=_Loader) if doc is not None]
    except yaml.YAMLError as exc:
        raise ValueError(f"{source}: not valid YAML: {exc}") from exc


# Manifest and CRD files, plain or gzip-compressed (the in-repository CRDs are stored as .yaml.gz).
YAML_SUFFIXES = (".yaml", ".yml", ".json", ".yaml.gz", ".yml.gz", ".json.gz")


def yaml_files(paths):
    """Expand files and directories (recursively) into a sorted list of YAML/JSON files (plain or .gz)."""
    found = []
    for path in paths:
        if os.path.isdir(path):
            for root, _dirs, files in os.walk(path):
                found.extend(os.path.join(root, name) for name in files if name.endswith(YAML_SUFFIXES))
        elif os.path.isfile(path):
            found.append(path)
        else:
            raise FileNotFoundError(f"{path}: no such file or directory")
    return sorted(found)


def read_text(path):
    """The text of a manifest or CRD file; a ``.gz`` file is decompressed."""
    if path.endswith(".gz"):
        try:
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                return handle.read()
        except (OSError, EOFError) as exc:
            raise ValueError(f"{path}: not a readable gzip file: {exc}") from exc
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def load_crds(paths, strict=True):
    """Build a CrdRegistry from every CustomResourceDefinition under ``paths``.

    A kind defined by two different files is an error: two versions of one add-on's CRDs in the
    same paths would otherwise validate against whichever file sorts last.
    """
    registry = CrdRegistry()
    for path in yaml_files(paths):
        text = read_text(path)
        if "CustomResourceDefinition" not in text:
            continue
        for doc in load_yaml_documents(text, path):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                spec = doc.get("spec") or {}
                key = (spec.get("group"), (spec.get("names") or {}).get("kind"))
                if key in registry.sources and registry.sources[key] != path:
                    raise ValueError(f"{path}: {key[1]}.{key[0]} is already defined by {registry.sources[key]}")
                registry.add_crd(doc, source=path, strict=strict)
    return registry


def crd_to_json_schema(schema, strict=True):
    """Convert a structural ``openAPIV3Schema`` to a JSON Schema (draft 4 keywords).

    - ``nullable: true`` admits null;
    - ``x-kubernetes-int-or-string`` becomes integer-or-string;
    - ``x-kubernetes-embedded-resource`` admits apiVersion/kind/metadata;
    - with ``strict``, objects that list ``properties`` reject any other field, unless they set
      ``x-kubernetes-preserve-unknown-fields`` or ``additionalProperties`` themselves;
    - the root gets apiVersion/kind and a strict ObjectMeta.
    """
    root = _convert(copy.deepcopy(schema), strict)
    props = root.setdefault("properties", {})
    props["apiVersion"] = {"type": "string"}
    props["kind"] = {"type": "string"}
    props["metadata"] = copy.deepcopy(_METADATA_SCHEMA)
    root["type"] = "object"
    if strict:
        root["additionalProperties"] = False
    return root


def _convert(node, strict):
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "description" or key.startswith("x-kubernetes-"):
            continue
        if key == "properties":
            out[key] = {name: _convert(sub, strict) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = _convert(value, strict)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [_convert(sub, strict) for sub in value]
        elif key == "nullable":
            continue
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        if not any(key in out for key in ("anyOf", "oneOf")):
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("x-kubernetes-embedded-resource"):
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"type": "object"})
    preserve = node.get("x-kubernetes-preserve-unknown-fields")
    if strict and "properties" in out and "additionalProperties" not in out and not preserve:
        out["additionalProperties"] = False
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"] if isinstance(out["type"], str) else [*out["type"], "null"]
    return out


def drop_nulls(value):
    """Return a copy of ``value`` without null map entries (the API server prunes them)."""
    if isinstance(value, dict):
        return {key: drop_nulls(sub) for key, sub in value.items() if sub is not None}
    if isinstance(value, list):
        return [drop_nulls(sub) for sub in value]
    return value


def _format_path(path):
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text.lstrip(".") or "<root>"


def _schema_errors(doc, schema):
    import jsonschema

    validator = jsonschema.Draft4Validator(schema)
    errors = []
    for error in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path))):
        errors.append(f"{_format_path(error.absolute_path)}: {_short_message(error)}")
    return errors


def _short_message(error):
    if error.validator == "additionalProperties" and error.validator_value is False:
        allowed = sorted((error.schema.get("properties") or {}).keys())
        extra = sorted(set(error.instance) - set(allowed)) if isinstance(error.instance, dict) else []
        return f"unknown field(s) {', '.join(extra)} (allowed: {', '.join(allowed)})"
    message = error.message
    return message if len(message) <= 300 else message[:297] + "..."


def describe(doc):
    """A short label for a document: Kind/namespace/name."""
    if not isinstance(doc, dict):
        return "<not a mapping>"
    meta = doc.get("metadata") or {}
    name = meta.get("name") or meta.get("generateName") or "<unnamed>"
    namespace = meta.get("namespace")
    return f"{doc.get('kind', '<no kind>')}/{namespace + '/' if namespace else ''}{name}"


def validate_document(doc, registry, kubernetes_version, strict=True, cel=None, cel_report=None):
    """Validate one manifest. Return a list of error strings (empty when valid).

    With ``cel`` (a ``k8s_cel.CelRules``), a custom resource that passes its schema is checked
    against its CRD's CEL rules too; ``cel_report`` (a dict) receives ``evaluated``, ``skipped``
    (transition rules) and ``unevaluable`` (rules that could not run, with the reason).
    """
    if not isinstance(doc, dict):
        return ["document is not a mapping"]
    doc = drop_nulls(doc)
    api_version = doc.get("apiVersion")
    kind = doc.get("kind")
    if not isinstance(api_version, str) or not api_version:
        return ["apiVersion: missing"]
    if not isinstance(kind, str) or not kind:
        return ["kind: missing"]
    group, _sep, _version = api_version.rpartition("/")
    schema = registry.lookup(api_version, kind) if registry else None
    if schema is not None:
        errors = _schema_errors(doc, schema)
        if cel is not None and not errors:
            outcome = cel.evaluate(doc, registry.lookup_rules(api_version, kind))
            if cel_report is not None:
                cel_report.update({k: outcome[k] for k in ("evaluated", "skipped", "unevaluable")})
            errors = outcome["errors"]
        return errors
    if registry and (group, kind) in registry.served:
        served = ", ".join(f"{group}/{v}" for v in registry.served[(group, kind)])
        return [f"apiVersion: {api_version} is not served for kind {kind} (served: {served})"]
    if registry and group in registry.groups():
        kinds = sorted(k for g, k in registry.served if g == group)
        return [f"kind: {kind} is not a kind of group {group} (kinds: {', '.join(kinds)})"]
    return _core_errors(doc, kubernetes_version, strict)


def _core_errors(doc, kubernetes_version, strict):
    if not HAS_KUBERNETES_VALIDATE:  # pragma: no cover
        return ["kubernetes-validate is not installed: core kinds cannot be validated"]
    import kubernetes_validate
    import kubernetes_validate.utils as _kv_utils

    try:
        kubernetes_validate.validate(doc, kubernetes_version, strict=strict)
    except _kv_utils.SchemaNotFoundError:
        return [
            f"apiVersion/kind: no schema for {doc['apiVersion']} {doc['kind']} in Kubernetes "
            f"{kubernetes_version} nor in the CRD directories"
        ]
    except _kv_utils.VersionNotSupportedError as exc:
        return [f"kubernetes_version: {exc.message}"]
    except _kv_utils.ValidationError as exc:
        return [f"{_format_path(exc.absolute_path)}: {_short_message(exc)}"]
    return []


def validate_documents(docs, registry, kubernetes_version, strict=True, source="<data>", cel=None):
    """Validate a list of manifests; return one result per document (with ``cel`` when CEL ran)."""
    results = []
    for index, doc in enumerate(docs):
        report = {}
        result = {
            "source": source,
            "index": index,
            "document": describe(doc),
            "errors": validate_document(doc, registry, kubernetes_version, strict, cel, report),
        }
        if report:
            result["cel"] = report
        results.append(result)
    return results


def validate_values(values, schema, source="values"):
    """Validate a Helm values document against a JSON Schema; return error strings."""
    if not isinstance(values, dict):
        return [f"{source}: values must be a mapping"]
    return [f"{source}: {error}" for error in _schema_errors(drop_nulls(values), schema)]


def supported_kubernetes_versions():
    """Kubernetes minor versions kubernetes-validate ships schemas for."""
    if not HAS_KUBERNETES_VALIDATE:  # pragma: no cover
        return []
    import kubernetes_validate.utils as _kv_utils

    return sorted(set(_kv_utils.all_versions()), key=lambda v: tuple(int(x) for x in v.split(".")))
