import unittest

from inventory import Inventory


class InventoryTest(unittest.TestCase):
    def test_add(self):
        inv = Inventory()
        inv.add("apple", 2)
        self.assertEqual(inv.count("apple"), 2)

    def test_remove(self):
        inv = Inventory()
        inv.add("apple", 3)
        inv.remove("apple", 3)
        self.assertEqual(inv.count("apple"), 0)

    def test_remove_too_many(self):
        inv = Inventory()
        inv.add("apple", 1)
        with self.assertRaises(ValueError):
            inv.remove("apple", 2)
        self.assertEqual(inv.count("apple"), 1)
