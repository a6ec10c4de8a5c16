"""Verifies deliveries with the Standard Webhooks reference library, as a receiver would.

Reads JSON lines {"secret", "headers": {...}, "body"} on stdin; prints one line per
input: "ok" or "error: <why>".
"""
import json
import sys

from standardwebhooks.webhooks import Webhook

for line in sys.stdin:
    if not line.strip():
        continue
    item = json.loads(line)
    try:
        Webhook(item["secret"]).verify(item["body"], item["headers"])
        print("ok")
    except Exception as e:  # noqa: BLE001 - any failure is the answer
        print(f"error: {type(e).__name__}: {e}")
    sys.stdout.flush()
