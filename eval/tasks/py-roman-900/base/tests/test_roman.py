import unittest

from roman import to_roman


class RomanTest(unittest.TestCase):
    def test_small(self):
        self.assertEqual(to_roman(14), "XIV")
