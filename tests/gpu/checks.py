"""What the GPU verification scripts share: named checks printed as they pass or fail and
collected into the report they write."""
import json

checks = []
report = {"checks": checks}


def check(name, ok, detail):
    checks.append({"check": name, "ok": bool(ok), "detail": detail})
    print(("PASS " if ok else "FAIL ") + name + ": " + json.dumps(detail), flush=True)


def all_passed():
    return all(c["ok"] for c in checks)
