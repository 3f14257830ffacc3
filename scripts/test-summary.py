#!/usr/bin/env python3
"""Prints the closing line of one or more meson test runs, "N passed, N failed, N skipped",
and exits non-zero when a test failed or none passed. A run whose log is missing counts
as one failure."""
import json
import os
import sys

passed = failed = skipped = 0
for path in sys.argv[1:]:
    if not os.path.exists(path):
        print(f"{path}: no test log", file=sys.stderr)
        failed += 1
        continue
    with open(path) as log:
        for line in log:
            result = json.loads(line)["result"]
            if result in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif result == "SKIP":
                skipped += 1
            else:
                failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed or passed == 0 else 0)
