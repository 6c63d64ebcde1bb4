from values import to_bool


def parse(text):
    """key = value lines into a dict; values "true"/"false" become booleans."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        b = to_bool(value)
        out[key.strip()] = value if b is None else b
    return out
