#!/usr/bin/env python3
"""Expected verdicts of Scrapy Cluster 1.3's Kafka Monitor for cases.jsonl.

Regenerate after editing cases.jsonl (Python 3 with jsonschema 4.x, from any
directory; paths are relative to this file):

    python3 gen.py       # schemas from ../../../../../shared/reference/original-schemas
    python3 gen.py /work/shared/reference/original-schemas

It reads cases.jsonl (one raw request text per line, split on "\\n" only, so
a line may hold any other character; some lines are deliberately not JSON)
and writes expected.jsonl, one object per case:

    {"input": <the raw text>, "json_ok": bool,
     "plugin": "ScraperHandler" | "ActionHandler" | "StatsHandler" | "ZookeeperHandler" | null,
     "filled": <the request with defaults filled in, or null>}

The verdict is computed the way the original's KafkaMonitor._process_messages
does (kafka-monitor/kafka_monitor.py): json.loads the text (a ValueError means
"Unparseable JSON"); then for each plugin in rank order (scraper 100, action
200, stats 300, zookeeper 400) deepcopy the loaded value and validate it with
Draft4Validator extended by extend_with_default (copied below); the first
plugin whose schema validates handles the request, with the defaults the
validation filled in. The original then adds a "ts" field for its stats
before calling the handler; that is not part of the verdict.

Python's json accepts NaN, Infinity and -Infinity, and reads a number too
large for a float (1e400) as Infinity. JSON cannot express those values, so
in "filled" each is written as {"$nonfinite": "NaN" | "Infinity" | "-Infinity"}.

The consumer of this file is ../../conformance_test.go.
"""

import copy
import json
import math
import os
import sys

from jsonschema import Draft4Validator, ValidationError, validators

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SCHEMAS = os.path.join(HERE, "..", "..", "..", "..", "..", "shared", "reference", "original-schemas")

# (rank, plugin class name, schema file), as the original's default PLUGINS.
PLUGINS = [
    (100, "ScraperHandler", "scraper_schema.json"),
    (200, "ActionHandler", "action_schema.json"),
    (300, "StatsHandler", "stats_schema.json"),
    (400, "ZookeeperHandler", "zookeeper_schema.json"),
]


def extend_with_default(validator_class):
    """The original's KafkaMonitor.extend_with_default, unchanged."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        for error in validate_properties(validator, properties, instance, schema):
            yield error

        for property, subschema in list(properties.items()):
            if "default" in subschema:
                instance.setdefault(property, subschema["default"])

    return validators.extend(validator_class, {"properties": set_defaults})


def load_plugins(schema_dir):
    plugins = []
    for rank, name, filename in sorted(PLUGINS):
        with open(os.path.join(schema_dir, filename)) as f:
            plugins.append((name, json.load(f)))
    return plugins


def verdict(text, plugins, validator):
    """Returns (json_ok, plugin name or None, filled object or None)."""
    try:
        loaded = json.loads(text)
    except ValueError:
        return False, None, None
    for name, schema in plugins:
        the_dict = copy.deepcopy(loaded)
        try:
            validator(schema).validate(the_dict)
        except ValidationError:
            continue
        return True, name, the_dict
    return True, None, None


def finite(v):
    """v with every non-finite float replaced by {"$nonfinite": ...}."""
    if isinstance(v, float) and not math.isfinite(v):
        return {"$nonfinite": "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")}
    if isinstance(v, dict):
        return {k: finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [finite(x) for x in v]
    return v


def main(argv):
    schema_dir = argv[1] if len(argv) > 1 else DEFAULT_SCHEMAS
    plugins = load_plugins(schema_dir)
    validator = extend_with_default(Draft4Validator)

    with open(os.path.join(HERE, "cases.jsonl"), "rb") as f:
        raw = f.read()
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()

    out = []
    for lineno, line in enumerate(lines, 1):
        text = line.decode("utf-8")  # the original's consumer decodes UTF-8 strictly
        json_ok, name, filled = verdict(text, plugins, validator)
        rec = {"input": text, "json_ok": json_ok, "plugin": name, "filled": finite(filled)}
        out.append(json.dumps(rec, allow_nan=False))

    with open(os.path.join(HERE, "expected.jsonl"), "w") as f:
        f.write("\n".join(out) + "\n")
    counts = {}
    for line in out:
        p = json.loads(line)["plugin"]
        counts[p] = counts.get(p, 0) + 1
    print("%d cases: %s" % (len(out), ", ".join("%s %d" % (k, v) for k, v in sorted(counts.items(), key=str))))


if __name__ == "__main__":
    main(sys.argv)
