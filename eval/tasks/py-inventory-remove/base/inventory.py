class Inventory:
    def __init__(self):
        self._items = {}

    def add(self, name, count=1):
        self._items[name] = self._items.get(name, 0) + count

    def count(self, name):
        return self._items.get(name, 0)
