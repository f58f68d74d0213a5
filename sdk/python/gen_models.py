#!/usr/bin/env python3
"""Generates gpurent/models.py from docs/openapi.json: one dataclass per object schema in
components/schemas, a Literal alias per string enum.

    python3 sdk/python/gen_models.py            # rewrite gpurent/models.py
    python3 sdk/python/gen_models.py --check    # exit 1 if the checked-in file is stale (CI)

Standard library only; the output depends only on the spec (deterministic).

Mapping: string/integer/number/boolean -> str/int/float/bool; array -> list[T]; an object with
only additionalProperties -> dict[str, T]; a $ref -> the generated class (or enum alias); a
nullable type ("type": [T, "null"] or oneOf [..., {"type": "null"}]) or a property that is not
required -> Optional[T] defaulting to None; an inline object with properties -> a nested class
named Parent + FieldName; allOf -> the properties of every part merged. A property whose name is
a Python keyword gets a trailing underscore (`from` -> `from_`).
"""
from __future__ import annotations

import argparse
import json
import keyword
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_SPEC = os.path.join(REPO, "docs", "openapi.json")
DEFAULT_OUT = os.path.join(HERE, "gpurent", "models.py")

PRIMITIVES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}


def camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.replace("-", "_").split("_"))


def py_name(name: str) -> str:
    return name + "_" if keyword.iskeyword(name) else name


class Type:
    """A Python type: its annotation, how to convert a JSON value into it and back."""

    def __init__(self, annotation, load, dump, plain=True):
        self.annotation = annotation
        self.load = load  # function(expr, depth) -> expr
        self.dump = dump
        self.plain = plain  # True when JSON values are used as they are (no class inside)


def identity(expr, depth):
    return expr


ANY = Type("Any", identity, identity)


class Generator:
    def __init__(self, spec):
        self.schemas = spec["components"]["schemas"]
        self.classes = []  # (name, code), in emission order
        self.aliases = []  # (name, code)
        self.emitted = set()

    def ref_name(self, ref):
        prefix = "#/components/schemas/"
        if not ref.startswith(prefix):
            raise ValueError(f"unsupported $ref {ref}")
        return ref[len(prefix):]

    def resolve(self, schema):
        while "$ref" in schema:
            schema = self.schemas[self.ref_name(schema["$ref"])]
        return schema

    # ---- types --------------------------------------------------------------------------------
    def type_of(self, schema, context):
        """context: the class name a nested inline object would get."""
        if "$ref" in schema:
            name = self.ref_name(schema["$ref"])
            target = self.schemas[name]
            if self.is_enum(target):
                self.emit_alias(name, target)
                return Type(name, identity, identity)
            if self.is_class(target):
                self.emit_class(name, target)
                return Type(name, lambda e, d, n=name: f"{n}.from_dict({e})",
                            lambda e, d: f"{e}.to_dict()", plain=False)
            return self.type_of(target, name)
        for combiner in ("oneOf", "anyOf"):
            if combiner in schema and all("type" in s or "$ref" in s for s in schema[combiner]):
                options = [s for s in schema[combiner] if s.get("type") != "null"]
                nullable = len(options) != len(schema[combiner])
                if len(options) == 1:
                    inner = self.type_of(options[0], context)
                else:
                    parts = [self.type_of(s, context) for s in options]
                    if all(p.plain for p in parts):
                        inner = Type("Union[" + ", ".join(p.annotation for p in parts) + "]",
                                     identity, identity)
                    else:
                        inner = ANY
                return self.optional(inner) if nullable else inner
        if "allOf" in schema:
            return self.type_of_object(self.merge_all_of(schema), context)
        types = schema.get("type")
        nullable = False
        if isinstance(types, list):
            nullable = "null" in types
            rest = [t for t in types if t != "null"]
            if len(rest) != 1:
                return ANY
            types = rest[0]
        if types is None:
            inner = ANY
        elif types in PRIMITIVES:
            if types == "string" and "enum" in schema:
                inner = Type("Literal[" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]",
                             identity, identity)
            else:
                inner = Type(PRIMITIVES[types], identity, identity)
        elif types == "array":
            item = self.type_of(schema.get("items", {}), context + "Item")
            inner = self.list_of(item)
        elif types == "object":
            inner = self.type_of_object(schema, context)
        else:
            inner = ANY
        return self.optional(inner) if nullable else inner

    def type_of_object(self, schema, context):
        if schema.get("properties"):
            self.emit_class(context, schema)
            return Type(context, lambda e, d, n=context: f"{n}.from_dict({e})",
                        lambda e, d: f"{e}.to_dict()", plain=False)
        extra = schema.get("additionalProperties")
        value = self.type_of(extra, context + "Value") if isinstance(extra, dict) else ANY
        return self.dict_of(value)

    def optional(self, inner):
        if inner.annotation.startswith("Optional[") or inner is ANY:
            return inner
        if inner.plain:
            return Type(f"Optional[{inner.annotation}]", identity, identity)
        return Type(f"Optional[{inner.annotation}]",
                    lambda e, d: f"(None if {e} is None else {inner.load(e, d)})",
                    lambda e, d: f"(None if {e} is None else {inner.dump(e, d)})", plain=False)

    def list_of(self, item):
        if item.plain:
            return Type(f"list[{item.annotation}]", lambda e, d: f"list({e})",
                        lambda e, d: f"list({e})")
        return Type(f"list[{item.annotation}]",
                    lambda e, d: f"[{item.load(f'x{d}', d + 1)} for x{d} in {e}]",
                    lambda e, d: f"[{item.dump(f'x{d}', d + 1)} for x{d} in {e}]", plain=False)

    def dict_of(self, value):
        if value.plain:
            return Type(f"dict[str, {value.annotation}]", lambda e, d: f"dict({e})",
                        lambda e, d: f"dict({e})")
        return Type(f"dict[str, {value.annotation}]",
                    lambda e, d: f"{{k{d}: {value.load(f'v{d}', d + 1)} for k{d}, v{d} in {e}.items()}}",
                    lambda e, d: f"{{k{d}: {value.dump(f'v{d}', d + 1)} for k{d}, v{d} in {e}.items()}}",
                    plain=False)

    # ---- schemas ------------------------------------------------------------------------------
    def is_enum(self, schema):
        return schema.get("type") == "string" and "enum" in schema

    def is_class(self, schema):
        return bool(schema.get("properties")) or "allOf" in schema

    def merge_all_of(self, schema):
        properties, required = {}, []
        for part in schema["allOf"]:
            part = self.resolve(part)
            if "allOf" in part:
                part = self.merge_all_of(part)
            properties.update(part.get("properties", {}))
            required += [r for r in part.get("required", []) if r not in required]
        merged = {"type": "object", "properties": properties, "required": required}
        if "description" in schema:
            merged["description"] = schema["description"]
        return merged

    def emit_alias(self, name, schema):
        if name in self.emitted:
            return
        self.emitted.add(name)
        values = ", ".join(json.dumps(v) for v in schema["enum"])
        self.aliases.append((name, f"{name} = Literal[{values}]\n"))

    def emit_class(self, name, schema):
        if name in self.emitted:
            return
        self.emitted.add(name)
        if "allOf" in schema:
            schema = self.merge_all_of(schema)
        required = set(schema.get("required", []))
        fields = []  # (json name, python name, Type, required)
        for json_name, prop in schema.get("properties", {}).items():
            t = self.type_of(prop, name + camel(json_name))
            is_required = json_name in required
            if not is_required:
                t = self.optional(t)
            fields.append((json_name, py_name(json_name), t, is_required))
        # Dataclass fields with defaults must follow those without; keep the spec's order within.
        fields.sort(key=lambda f: not f[3])
        lines = ["@dataclass(frozen=True)", f"class {name}:"]
        description = schema.get("description")
        if description:
            lines.append(f"    {json.dumps(description)}")
            lines.append("")
        for json_name, attr, t, is_required in fields:
            lines.append(f"    {attr}: {t.annotation}" + ("" if is_required else " = None"))
        if not fields:
            lines.append("    pass")
        lines.append("")
        lines.append("    @classmethod")
        lines.append(f"    def from_dict(cls, d: dict[str, Any]) -> \"{name}\":")
        lines.append("        \"\"\"Builds it from a JSON object; unknown keys are ignored.\"\"\"")
        lines.append("        _require_object(d, cls.__name__)")
        lines.append("        kw: dict[str, Any] = {}")
        for json_name, attr, t, is_required in fields:
            key = json.dumps(json_name)
            if is_required and t.load("v", 0) == "v":
                lines.append(f"        kw[{json.dumps(attr)}] = _required(d, {key}, cls.__name__)")
            elif is_required:
                lines.append(f"        v = _required(d, {key}, cls.__name__)")
                lines.append(f"        kw[{json.dumps(attr)}] = {t.load('v', 0)}")
            elif t.load("v", 0) == "v":
                lines.append(f"        if {key} in d:")
                lines.append(f"            kw[{json.dumps(attr)}] = d[{key}]")
            else:
                lines.append(f"        if {key} in d:")
                lines.append(f"            v = d[{key}]")
                lines.append(f"            kw[{json.dumps(attr)}] = {t.load('v', 0)}")
        lines.append("        return cls(**kw)")
        lines.append("")
        lines.append("    def to_dict(self) -> dict[str, Any]:")
        lines.append("        \"\"\"The JSON object; optional fields that are None are left out.\"\"\"")
        lines.append("        out: dict[str, Any] = {}")
        for json_name, attr, t, is_required in fields:
            key = json.dumps(json_name)
            if is_required and t.dump("v", 0) == "v":
                lines.append(f"        out[{key}] = self.{attr}")
            elif is_required:
                lines.append(f"        v = self.{attr}")
                lines.append(f"        out[{key}] = {t.dump('v', 0)}")
            elif t.dump("v", 0) == "v":
                lines.append(f"        if self.{attr} is not None:")
                lines.append(f"            out[{key}] = self.{attr}")
            else:
                lines.append(f"        if self.{attr} is not None:")
                lines.append(f"            v = self.{attr}")
                lines.append(f"            out[{key}] = {t.dump('v', 0)}")
        lines.append("        return out")
        self.classes.append((name, "\n".join(lines) + "\n"))

    def generate(self):
        for name in sorted(self.schemas):
            schema = self.schemas[name]
            if self.is_enum(schema):
                self.emit_alias(name, schema)
            elif self.is_class(schema):
                self.emit_class(name, schema)
        header = '''"""Typed models of the gpurent API: generated from docs/openapi.json by
sdk/python/gen_models.py. Do not edit; run `python3 sdk/python/gen_models.py` instead.

Each class has from_dict() (unknown keys are ignored, so newer servers keep working; a missing
required key raises ValueError) and to_dict() (optional fields that are None are left out).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Optional, Union


def _require_object(d: Any, name: str) -> None:
    if not isinstance(d, dict):
        raise ValueError(f"{name}: expected a JSON object, got {type(d).__name__}")


def _required(d: dict[str, Any], key: str, name: str) -> Any:
    try:
        return d[key]
    except KeyError:
        raise ValueError(f"{name}: required key {key!r} is missing") from None

'''
        parts = [header]
        for _, code in sorted(self.aliases):
            parts.append(code)
        parts.append("\n")
        parts.append("\n\n".join(code for _, code in sorted(self.classes)))
        all_names = sorted(n for n, _ in self.aliases) + sorted(n for n, _ in self.classes)
        parts.append("\n\n__all__ = [\n" + "".join(f"    {json.dumps(n)},\n" for n in all_names)
                     + "]\n")
        return "".join(parts)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default=DEFAULT_SPEC)
    parser.add_argument("--out", default=DEFAULT_OUT)
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if --out differs from what would be generated")
    args = parser.parse_args(argv)
    with open(args.spec, encoding="utf-8") as f:
        spec = json.load(f)
    code = Generator(spec).generate()
    if args.check:
        try:
            with open(args.out, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current != code:
            print(f"{args.out} is out of date with {args.spec}: run "
                  f"python3 sdk/python/gen_models.py", file=sys.stderr)
            return 1
        print(f"{args.out} is up to date")
        return 0
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(code)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
