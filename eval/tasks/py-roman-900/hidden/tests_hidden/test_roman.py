import unittest

from roman import to_roman


class RomanTest(unittest.TestCase):
    def test_small(self):
        self.assertEqual(to_roman(14), "XIV")
        self.assertEqual(to_roman(2024), "MMXXIV")

    def test_900(self):
        self.assertEqual(to_roman(1900), "MCM")
        self.assertEqual(to_roman(949), "CMXLIX")
