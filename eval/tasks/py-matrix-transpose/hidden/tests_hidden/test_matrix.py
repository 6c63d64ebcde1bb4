import unittest

from matrix import Matrix


class MatrixTest(unittest.TestCase):
    def test_shape(self):
        self.assertEqual(Matrix([[1, 2, 3], [4, 5, 6]]).shape(), (2, 3))

    def test_transpose(self):
        m = Matrix([[1, 2, 3], [4, 5, 6]])
        self.assertEqual(m.transpose(), Matrix([[1, 4], [2, 5], [3, 6]]))
        self.assertEqual(m, Matrix([[1, 2, 3], [4, 5, 6]]))
