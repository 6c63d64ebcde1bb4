def dedupe(items):
    """The items without repeats, in the order they first appear."""
    return list(dict.fromkeys(items))
