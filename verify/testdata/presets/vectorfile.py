"""The vector file format of verify/presets_test.go, written by the
generators beside it (gen_core.py, gen_jws.py)."""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def q(s):
    """A YAML double-quoted scalar (JSON's string syntax is YAML's)."""
    return json.dumps(s)


def write(name, *, script, origin, follows, now, url, headers, body, secret=None, secrets=None,
          verify=None, method="POST", event_type=None, negative=()):
    lines = [
        f"# Written by {script}; do not edit by hand.",
        f"preset: {name}",
        f"origin: {origin}",
        f"follows: {follows}",
    ]
    if secret is not None:
        lines.append(f"secret: {q(secret)}")
    if secrets:
        lines.append("secrets: [" + ", ".join(q(s) for s in secrets) + "]")
    if verify:
        lines.append("verify: {" + ", ".join(f"{k}: {q(v)}" for k, v in verify.items()) + "}")
    lines += [f"now: {now}", f"method: {method}", f"url: {url}", "headers:"]
    lines += [f"  {k}: {q(v)}" for k, v in headers.items()]
    lines.append(f"body: {q(body)}")
    if event_type is not None:
        lines.append(f"event_type: {q(event_type)}")
    if negative:
        lines.append("negative:")
        for n in negative:
            lines.append(f"  - name: {q(n['name'])}")
            if "headers" in n:
                lines.append("    headers: {" + ", ".join(f"{q(k)}: {q(v)}" for k, v in n["headers"].items()) + "}")
            if "body" in n:
                lines.append(f"    body: {q(n['body'])}")
            if "now" in n:
                lines.append(f"    now: {n['now']}")
            lines.append(f"    err: {n['err']}")
    with open(os.path.join(HERE, name + ".yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")
