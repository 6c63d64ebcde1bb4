import unittest

from dedupe import dedupe


class DedupeTest(unittest.TestCase):
    def test_empty(self):
        self.assertEqual(dedupe([]), [])
