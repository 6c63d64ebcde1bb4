class Inventory:
    def __init__(self):
        self._items = {}

    def add(self, name, count=1):
        self._items[name] = self._items.get(name, 0) + count

    def count(self, name):
        return self._items.get(name, 0)

    def remove(self, name, count=1):
        have = self._items.get(name, 0)
        if count > have:
            raise ValueError(f"only {have} of {name}")
        if have == count:
            del self._items[name]
        else:
            self._items[name] = have - count
