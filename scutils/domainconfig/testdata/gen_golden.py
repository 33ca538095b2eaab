#!/usr/bin/env python3
"""Writes the Marshal goldens: what PyYAML writes for each case.

The original Redis Monitor (redis-monitor/plugins/zookeeper_monitor.py)
stores the domain configuration with yaml.dump(d, default_flow_style=False);
Document.Marshal must write the same bytes. For every case in
marshal_cases.json this script writes marshal/<name>.yaml. Scales are always
Python floats (the original's come from JSON with a schema default of 1.0);
"inf", "-inf" and "nan" are given as strings.

Run from this directory after changing the cases (PyYAML 6 was used):

    python3 gen_golden.py
"""
import json
import os

import yaml


def document(case):
    return {
        "blacklist": list(case.get("blacklist", [])),
        "domains": {
            name: {"window": d["window"], "hits": d["hits"], "scale": float(d["scale"])}
            for name, d in case.get("domains", {}).items()
        },
    }


def main():
    with open("marshal_cases.json", encoding="utf-8") as f:
        cases = json.load(f)
    os.makedirs("marshal", exist_ok=True)
    for case in cases:
        out = yaml.dump(document(case), default_flow_style=False)
        with open(os.path.join("marshal", case["name"] + ".yaml"), "w", encoding="utf-8", newline="") as f:
            f.write(out)
    print("wrote %d goldens with PyYAML %s" % (len(cases), yaml.__version__))


if __name__ == "__main__":
    main()
