import unittest

from dedupe import dedupe


class DedupeTest(unittest.TestCase):
    def test_empty(self):
        self.assertEqual(dedupe([]), [])

    def test_order(self):
        self.assertEqual(dedupe(["b", "a", "b", "c", "a"]), ["b", "a", "c"])
        self.assertEqual(dedupe([3, 1, 3, 2, 1]), [3, 1, 2])
