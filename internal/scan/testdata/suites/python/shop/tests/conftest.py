import os
import tempfile

import pytest

from shop.app import app as flask_app


@pytest.fixture
def app():
    flask_app.config.update(TESTING=True, SECRET_KEY="test-secret-key")
    return flask_app


@pytest.fixture
def orders_file():
    path = os.path.join("/tmp", "shop-orders.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write('[{"id": 1, "items": [{"price": 2, "quantity": 3}]}]')
    os.chmod(path, 0o777)
    yield path
    os.remove(path)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def workdir():
    with tempfile.TemporaryDirectory() as d:
        yield d
