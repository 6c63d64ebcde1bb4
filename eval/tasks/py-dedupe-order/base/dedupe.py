def dedupe(items):
    """The items without repeats, in the order they first appear."""
    return list(set(items))
