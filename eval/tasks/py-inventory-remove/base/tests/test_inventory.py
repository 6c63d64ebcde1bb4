import unittest

from inventory import Inventory


class InventoryTest(unittest.TestCase):
    def test_add(self):
        inv = Inventory()
        inv.add("apple", 2)
        self.assertEqual(inv.count("apple"), 2)
